/* out/common.c: what every output decides the same way. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "out/output.h"
#include "util.h"

void warn_index_build(struct warn_index *ix, const struct verdicts *v, size_t ntasks)
{
    ix->first = xcalloc(ntasks + 2, sizeof(size_t));
    ix->order = xcalloc(v->n ? v->n : 1, sizeof(size_t));
    /* counting sort by task; device findings (task -1) are not indexed */
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->first[(size_t)v->w[i].task + 2]++;
    for (size_t t = 2; t < ntasks + 2; t++)
        ix->first[t] += ix->first[t - 1];
    for (size_t i = 0; i < v->n; i++)
        if (v->w[i].task >= 0)
            ix->order[ix->first[(size_t)v->w[i].task + 1]++] = i;
}

void warn_index_free(struct warn_index *ix)
{
    free(ix->first);
    free(ix->order);
}

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
