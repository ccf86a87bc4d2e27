/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz the arithmetic over the BPF lens's maps (src/source/lens_calc.c): the user-space
 * side decodes counters the kernel programs keep, and a reading can hold anything a race,
 * a reset or an eviction leaves there (counters that went backwards, sums that wrapped,
 * moments that disagree, empty histograms). The bytes fill two readings of one device
 * (its depth figures and two priorities' stage sums) and two wait rows; every helper is
 * called on them. What must hold: return codes as documented, quantiles and means NAN or
 * finite and not negative, a saturation verdict of -1, 0 or 1 that lens_judge_saturation
 * gives again, a wait share NAN or finite and not negative, and no undefined behaviour
 * (UBSan: the counters are unsigned 64-bit and any of them may be anything). */
#include <errno.h>
#include <math.h>

#include "fuzz.h"
#include "source/lens.h"

static size_t take(const uint8_t **p, size_t *n, void *dst, size_t want)
{
    size_t k = want < *n ? want : *n;
    memset(dst, 0, want);
    memcpy(dst, *p, k);
    *p += k;
    *n -= k;
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    const uint8_t *p = data;
    size_t n = size;
    struct lens_devstat ds[2];
    struct lens_devprio dp[4];
    struct lens_wait_row w[2];
    double itv = 0, aqu = 0;
    take(&p, &n, ds, sizeof(ds));
    take(&p, &n, dp, sizeof(dp));
    take(&p, &n, w, sizeof(w));
    take(&p, &n, &itv, sizeof(itv));
    take(&p, &n, &aqu, sizeof(aqu));
    /* One device for both readings, the priorities split between them. */
    for (int i = 0; i < 2; i++) {
        ds[i].major = 7;
        ds[i].minor = 0;
    }
    for (int i = 0; i < 4; i++) {
        dp[i].major = 7;
        dp[i].minor = 0;
        dp[i].prio &= 0xffff;
    }
    struct lens_reading a = { .devs = &ds[0], .ndevs = 1, .dp = &dp[0], .ndp = 2 };
    struct lens_reading b = { .devs = &ds[1], .ndevs = 1, .dp = &dp[2], .ndp = 2 };

    struct lens_dev_interval out;
    for (int pass = 0; pass < 2; pass++) {
        int rc = lens_dev_interval(pass ? &a : NULL, &b, 7, 0, itv, aqu, &out);
        FZ_CHECK(rc == 0 || rc == -ENODATA || rc == -ERANGE);
        FZ_CHECK(out.saturated >= -1 && out.saturated <= 1);
        FZ_CHECK(out.saturated == lens_judge_saturation(&out) || rc != 0);
        FZ_CHECK(isnan(out.device_p50_ms) || (isfinite(out.device_p50_ms) && out.device_p50_ms >= 0));
        FZ_CHECK(isnan(out.total_p99_ms) || (isfinite(out.total_p99_ms) && out.total_p99_ms >= 0));
    }
    struct lens_depth_fit fit;
    int rc = lens_depth_fit(&ds[0], &ds[1], &fit);
    FZ_CHECK(rc == 0 || rc == -ERANGE || rc == -ENODATA);

    for (int i = 0; i < 4; i++)
        for (int s = 0; s < LENS_NSTAGES; s++) {
            double q = lens_hist_quantile(dp[i].st[s].hist, LENS_HIST, 0.5);
            FZ_CHECK(isnan(q) || (isfinite(q) && q >= 0));
            struct lens_stage_sum d;
            int r2 = lens_stage_delta(&dp[i].st[s], &dp[(i + 1) % 4].st[s], &d);
            FZ_CHECK(r2 == 0 || r2 == -ERANGE);
            double m = lens_stage_mean_ms(&d);
            FZ_CHECK(isnan(m) || (isfinite(m) && m >= 0));
        }
    char buf[32];
    FZ_CHECK(lens_prio_name(dp[0].prio, buf, sizeof(buf)) != NULL);

    double pct = lens_wait_pct(&w[0], &w[1], itv);
    FZ_CHECK(isnan(pct) || (pct >= 0 && isfinite(pct)));
    return 0;
}
