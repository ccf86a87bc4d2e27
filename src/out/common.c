/* out/common.c: what every output decides the same way. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "out/output.h"

bool task_is_active(const struct task_rates *t)
{
    if (t->io_valid && (t->read_bps > 0 || t->write_bps > 0))
        return true;
    return t->delay_valid && t->io_delay_pct > 0.05;
}

const char *source_err_text(int err)
{
    switch (-err) {
    case 0: return "ok";
    case EACCES:
    case EPERM: return "permission denied";
    case ENOENT:
    case ESRCH: return "exited";
    case EINVAL: return "malformed";
    default: return strerror(-err);
    }
}
