/* SPDX-License-Identifier: GPL-2.0-or-later */
/* source/cgname.c: the names a person knows a cgroup by, from path conventions alone
 * (source/cgroupfs.h: cgroup_names_of). The conventions, as each project writes them:
 *   systemd       slices nest by name (a-b.slice inside a.slice), services and scopes
 *                 sit in slices, a user's manager is user@UID.service;
 *   docker        systemd driver docker-<64 hex>.scope, cgroupfs driver /docker/<id>;
 *   podman        libpod-<id>.scope (libpod-conmon-<id>.scope is its monitor), cgroupfs
 *                 /libpod_parent/libpod-<id>;
 *   containerd    cri-containerd-<id>.scope; CRI-O crio-<id>.scope (crio-conmon-: monitor);
 *   LXC/LXD       lxc.payload.NAME (4.0 on), /lxc/NAME before; lxc.monitor.NAME: monitor;
 *   Kubernetes    kubepods[.slice]/[burstable|besteffort]/pod<uid>, systemd driver
 *                 kubepods-burstable-pod<uid with _ for ->.slice; guaranteed pods have no
 *                 QoS level between kubepods and the pod.
 */
#include <stdbool.h>
#include <string.h>

#include "source/cgroupfs.h"
#include "util.h"

static bool ends_with(const char *s, size_t n, const char *suf)
{
    size_t k = strlen(suf);
    return n >= k && memcmp(s + n - k, suf, k) == 0;
}

static bool starts_with(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && memcmp(s, pre, k) == 0;
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static void copy_n(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void set_container(struct cgroup_names *o, const char *rt, const char *id, size_t n)
{
    str_copy(o->runtime, rt, sizeof(o->runtime));
    copy_n(o->id, sizeof(o->id), id, n);
    copy_n(o->short_id, sizeof(o->short_id), id, n < 12 ? n : 12);
}

/* "<prefix><64 hex><suffix>" */
static bool hex_between(const char *c, size_t n, const char *prefix, const char *suffix,
                        const char **id)
{
    size_t pl = strlen(prefix), sl = strlen(suffix);
    if (n != pl + 64 + sl || !starts_with(c, n, prefix) || !ends_with(c, n, suffix))
        return false;
    if (!is_hex64(c + pl, 64))
        return false;
    *id = c + pl;
    return true;
}

/* A pod uid is 36 characters (8-4-4-4-12); the systemd driver writes '_' for '-'. */
static bool set_pod(struct cgroup_names *o, const char *uid, size_t n, const char *qos)
{
    if (n < 8 || n >= sizeof(o->pod_uid))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = uid[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || ch == '-' || ch == '_'))
            return false;
    }
    for (size_t i = 0; i < n; i++)
        o->pod_uid[i] = uid[i] == '_' ? '-' : uid[i];
    o->pod_uid[n] = '\0';
    str_copy(o->qos, qos, sizeof(o->qos));
    return true;
}

void cgroup_names_of(const char *path, struct cgroup_names *out)
{
    memset(out, 0, sizeof(*out));
    char slice[CG_UNIT_MAX] = "";
    /* The two components before the current one (cgroupfs conventions need them). */
    const char *p1 = NULL, *p2 = NULL;
    size_t n1 = 0, n2 = 0;
    bool in_pod = false;
    const char *c = path;
    while (*c) {
        while (*c == '/')
            c++;
        if (!*c)
            break;
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        const char *id;

        if (ends_with(c, n, ".service") || ends_with(c, n, ".scope"))
            copy_n(out->unit, sizeof(out->unit), c, n);
        else if (ends_with(c, n, ".slice"))
            copy_n(slice, sizeof(slice), c, n);

        /* containers */
        if (hex_between(c, n, "docker-", ".scope", &id))
            set_container(out, "docker", id, 64);
        else if (p1 && n1 == 6 && memcmp(p1, "docker", 6) == 0 && is_hex64(c, n))
            set_container(out, "docker", c, 64);
        else if (hex_between(c, n, "libpod-", ".scope", &id) || hex_between(c, n, "libpod-", "", &id))
            set_container(out, "podman", id, 64);
        else if (hex_between(c, n, "cri-containerd-", ".scope", &id))
            set_container(out, "containerd", id, 64);
        else if (hex_between(c, n, "crio-", ".scope", &id) || hex_between(c, n, "crio-", "", &id))
            set_container(out, "cri-o", id, 64);
        else if (starts_with(c, n, "lxc.payload.") && n > 12)
            set_container(out, "lxc", c + 12, n - 12);
        else if (p1 && n1 == 3 && memcmp(p1, "lxc", 3) == 0 && !starts_with(c, n, "lxc.monitor."))
            set_container(out, "lxc", c, n);
        else if (in_pod && is_hex64(c, n))
            set_container(out, "cri", c, 64);

        /* Kubernetes pods: systemd driver */
        if (starts_with(c, n, "kubepods-") && ends_with(c, n, ".slice")) {
            const char *b = c + 9, *e = c + n - 6;
            size_t bn = (size_t)(e - b);
            if (starts_with(b, bn, "burstable-pod"))
                in_pod = set_pod(out, b + 13, bn - 13, "burstable") || in_pod;
            else if (starts_with(b, bn, "besteffort-pod"))
                in_pod = set_pod(out, b + 14, bn - 14, "besteffort") || in_pod;
            else if (starts_with(b, bn, "pod"))
                in_pod = set_pod(out, b + 3, bn - 3, "guaranteed") || in_pod;
        } else if (starts_with(c, n, "pod") && p1) {
            /* cgroupfs driver: kubepods/pod<uid>, kubepods/<qos>/pod<uid> */
            bool kp1 = n1 == 8 && memcmp(p1, "kubepods", 8) == 0;
            bool kp2 = p2 && n2 == 8 && memcmp(p2, "kubepods", 8) == 0;
            if (kp1)
                in_pod = set_pod(out, c + 3, n - 3, "guaranteed") || in_pod;
            else if (kp2 && n1 == 9 && memcmp(p1, "burstable", 9) == 0)
                in_pod = set_pod(out, c + 3, n - 3, "burstable") || in_pod;
            else if (kp2 && n1 == 10 && memcmp(p1, "besteffort", 10) == 0)
                in_pod = set_pod(out, c + 3, n - 3, "besteffort") || in_pod;
        }

        p2 = p1;
        n2 = n1;
        p1 = c;
        n1 = n;
        c += n;
    }
    if (!out->unit[0])
        str_copy(out->unit, slice, sizeof(out->unit));
}
