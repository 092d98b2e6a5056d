/* cgroup.c: the dispatcher: chooses a backend (falling back along auto's order), owns the Cgroup
 * and CgroupRun objects, and answers every public cgroup_* call through the backend's CgroupOps. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-internal.h"

/* none: no cgroups, limits by rlimits only; every other member takes its default. */
static int none_open(Cgroup *c, char **reterr) {
        snprintf(c->describe, sizeof(c->describe), "none: limits by rlimits only");
        return 0;
}

const CgroupOps cgroup_none_ops = {
        .backend = CGROUP_BACKEND_NONE,
        .name = "none",
        .open = none_open,
};

static const CgroupOps *const cgroup_backends[] = {
        [CGROUP_BACKEND_SYSTEMD] = &cgroup_systemd_ops,
        [CGROUP_BACKEND_CGROUPFS] = &cgroup_fs_ops,
        [CGROUP_BACKEND_NONE] = &cgroup_none_ops,
};

int cgroup_new_with(const CgroupConfig *config, const CgroupOps *const backends[3], Cgroup **ret,
                    char **reterr) {
        /* auto tries each in this order; an explicit want tries only its own. */
        static const CgroupBackend auto_order[] = { CGROUP_BACKEND_SYSTEMD, CGROUP_BACKEND_CGROUPFS,
                                                    CGROUP_BACKEND_NONE };
        CgroupBackend only;
        switch (config->want) {
        case CGROUP_WANT_SYSTEMD:
                only = CGROUP_BACKEND_SYSTEMD;
                break;
        case CGROUP_WANT_CGROUPFS:
                only = CGROUP_BACKEND_CGROUPFS;
                break;
        case CGROUP_WANT_NONE:
                only = CGROUP_BACKEND_NONE;
                break;
        default:
                only = (CgroupBackend) -1;
        }

        *reterr = NULL;
        _cleanup_(cgroup_freep) Cgroup *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->config = *config;
        c->base_fd = -EBADF;
        c->slice = strdup(config->slice ? config->slice : "mcp-execd.slice");
        if (!c->slice)
                return -ENOMEM;
        c->config.slice = c->slice;

        /* Why each backend could not be opened, by CgroupBackend. */
        _cleanup_free_ char *why_systemd = NULL, *why_cgroupfs = NULL, *why_none = NULL;
        char **why[] = {
                [CGROUP_BACKEND_SYSTEMD] = &why_systemd,
                [CGROUP_BACKEND_CGROUPFS] = &why_cgroupfs,
                [CGROUP_BACKEND_NONE] = &why_none,
        };
        for (size_t i = 0; i < ELEMENTSOF(auto_order); i++) {
                if (config->want != CGROUP_WANT_AUTO && auto_order[i] != only)
                        continue;
                const CgroupOps *ops = backends[auto_order[i]];
                int r = ops->open(c, why[auto_order[i]]);
                if (r < 0) {
                        if (config->want != CGROUP_WANT_AUTO) {
                                *reterr = TAKE_PTR(*why[auto_order[i]]);
                                return r;
                        }
                        continue;
                }
                c->ops = ops;
                /* Falling back to none under auto is worth a warning: say why the others failed. */
                if (config->want == CGROUP_WANT_AUTO && ops->backend == CGROUP_BACKEND_NONE &&
                    asprintf(reterr, "no cgroup backend available (systemd: %s; cgroupfs: %s)",
                             why_systemd ?: "?", why_cgroupfs ?: "?") < 0)
                        *reterr = NULL;
                *ret = TAKE_PTR(c);
                return 0;
        }
        return -ENODEV; /* unreachable while none opens */
}

int cgroup_new(const CgroupConfig *config, Cgroup **ret, char **reterr) {
        return cgroup_new_with(config, cgroup_backends, ret, reterr);
}

Cgroup *cgroup_free(Cgroup *c) {
        if (!c)
                return NULL;
        if (c->ops && c->ops->close)
                c->ops->close(c);
        free(c->slice);
        free(c->tenants);
        for (size_t i = 0; i < c->n_keep; i++)
                free(c->keep[i]);
        free(c->keep);
        free(c);
        return NULL;
}

CgroupBackend cgroup_backend(const Cgroup *c) {
        return c ? c->ops->backend : CGROUP_BACKEND_NONE;
}

const char *cgroup_backend_name(const Cgroup *c) {
        return c ? c->ops->name : "none";
}

const char *cgroup_describe(const Cgroup *c) {
        return c->describe;
}

int cgroup_stop_stale(Cgroup *c) {
        return c->ops->stop_stale ? c->ops->stop_stale(c) : 0;
}

int cgroup_keep_scope(Cgroup *c, const char *unit) {
        char **v = realloc(c->keep, (c->n_keep + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        c->keep = v;
        if (!(v[c->n_keep] = strdup(unit)))
                return -ENOMEM;
        c->n_keep++;
        return 0;
}

bool cg_scope_kept(const Cgroup *c, const char *unit) {
        for (size_t i = 0; i < c->n_keep; i++)
                if (strcmp(c->keep[i], unit) == 0)
                        return true;
        return false;
}

int cgroup_event_fd(Cgroup *c) {
        return c->ops->event_fd ? c->ops->event_fd(c) : -EBADF;
}

int cgroup_event_mask(Cgroup *c) {
        return c->ops->event_mask ? c->ops->event_mask(c) : 0;
}

uint64_t cgroup_event_timeout(Cgroup *c) {
        return c->ops->event_timeout ? c->ops->event_timeout(c) : UINT64_MAX;
}

int cgroup_event_process(Cgroup *c) {
        return c->ops->event_process ? c->ops->event_process(c) : 0;
}

int cgroup_tenants_set(Cgroup *c, const CgroupTenant *v, size_t n, char **reterr) {
        *reterr = NULL;
        _cleanup_free_ CgroupTenantSlice *set = n ? calloc(n, sizeof(*set)) : NULL;
        if (n && !set)
                return -ENOMEM;
        size_t done = 0;
        int r = 0;
        for (; done < n; done++) {
                if (strlen(v[done].name) > CGROUP_TENANT_NAME_MAX) {
                        r = reason_set(reterr, -EINVAL, "tenant name too long: %.40s", v[done].name);
                        break;
                }
                if (!c->ops->tenant_apply) {
                        r = reason_set(reterr, -EOPNOTSUPP, "the %s backend has no slices: the memory, process and CPU "
                                      "bounds of tenant %s cannot be enforced", c->ops->name, v[done].name);
                        break;
                }
                snprintf(set[done].name, sizeof(set[done].name), "%s", v[done].name);
                r = c->ops->tenant_apply(c, &v[done], set[done].slice, sizeof(set[done].slice), reterr);
                if (r < 0)
                        break;
        }
        /* What was applied holds: the runs of those tenants go to their slices. */
        free(c->tenants);
        c->tenants = TAKE_PTR(set);
        c->n_tenants = c->ops->tenant_apply ? done : 0;
        return r;
}

const char *cgroup_tenant_slice(const Cgroup *c, const char *tenant) {
        if (!c || !tenant || !*tenant)
                return NULL;
        for (size_t i = 0; i < c->n_tenants; i++)
                if (strcmp(c->tenants[i].name, tenant) == 0)
                        return c->tenants[i].slice;
        return NULL;
}

int cgroup_run_new(Cgroup *c, const char *run_id, uint32_t timeout_s, const char *tenant, CgroupRun **ret) {
        _cleanup_(cgroup_run_freep) CgroupRun *cr = calloc(1, sizeof(*cr));
        if (!cr)
                return -ENOMEM;
        *cr = (CgroupRun) {
                .cgroup = c, .timeout_s = timeout_s, .run_fd = -EBADF, .supervisor_fd = -EBADF,
                .payload_fd = -EBADF, .pidfd = -EBADF,
        };
        snprintf(cr->id, sizeof(cr->id), "%s", run_id);
        snprintf(cr->slice, sizeof(cr->slice), "%s", cgroup_tenant_slice(c, tenant) ?: "");
        if (c->ops->run_create) {
                int r = c->ops->run_create(cr);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(cr);
        return 0;
}

int cgroup_run_adopt(Cgroup *c, const char *run_id, const char *unit, int run_fd, int payload_fd, CgroupRun **ret) {
        CgroupRun *cr = calloc(1, sizeof(*cr));
        if (!cr) {
                safe_close(run_fd);
                safe_close(payload_fd);
                return -ENOMEM;
        }
        *cr = (CgroupRun) {
                .cgroup = c, .run_fd = run_fd, .supervisor_fd = -EBADF, .payload_fd = payload_fd, .pidfd = -EBADF,
        };
        snprintf(cr->id, sizeof(cr->id), "%s", run_id);
        snprintf(cr->unit, sizeof(cr->unit), "%s", unit ?: "");
        *ret = cr;
        return 0;
}

int cgroup_run_fd(const CgroupRun *cr) {
        return cr->run_fd;
}

int cgroup_run_frozen(CgroupRun *cr) {
        char buf[16];
        if (cr->payload_fd < 0)
                return -EBADF;
        int r = cg_read_at(cr->payload_fd, "cgroup.freeze", buf, sizeof(buf));
        if (r < 0)
                return r;
        return buf[0] == '1';
}

int cgroup_run_supervisor_fd(const CgroupRun *cr) {
        return cr->cgroup->ops->clone_into_supervisor ? cr->supervisor_fd : -EBADF;
}

int cgroup_run_place(CgroupRun *cr, pid_t init_pid, int init_pidfd, CgroupPlacedFn placed, void *userdata,
                char **reterr) {
        *reterr = NULL;
        if (!cr->cgroup->ops->run_place)
                return 1; /* none: nothing to do; cgroupfs: cloned straight into supervisor/ */
        cr->pid = init_pid;
        cr->pidfd = init_pidfd;
        cr->placed = placed;
        cr->userdata = userdata;
        int r = cr->cgroup->ops->run_place(cr, reterr);
        return r < 0 ? r : 0;
}

void cgroup_run_cancel_place(CgroupRun *cr) {
        if (cr && cr->cgroup->ops->run_cancel)
                cr->cgroup->ops->run_cancel(cr);
}

int cgroup_run_payload_fd(const CgroupRun *cr) {
        return cr->payload_fd;
}

const char *cgroup_run_unit(const CgroupRun *cr) {
        return cr->unit[0] ? cr->unit : NULL;
}

int cgroup_run_kill(CgroupRun *cr) {
        return cr->cgroup->ops->run_kill ? cr->cgroup->ops->run_kill(cr) : -EBADF;
}

int cgroup_run_freeze(CgroupRun *cr, bool frozen) {
        if (cr->payload_fd < 0)
                return -EBADF;
        return cg_write_at(cr->payload_fd, "cgroup.freeze", frozen ? "1" : "0");
}

int cgroup_run_read(CgroupRun *cr, CgroupStats *ret) {
        return cr->cgroup->ops->run_read ? cr->cgroup->ops->run_read(cr, ret) : -EBADF;
}

int cgroup_run_usage(CgroupRun *cr, CgroupUsage *ret) {
        char buf[1024];
        CgroupUsage u = {};
        if (cr->payload_fd < 0)
                return -EBADF;
        int r = cg_read_at(cr->payload_fd, "cpu.stat", buf, sizeof(buf));
        if (r < 0)
                return r;
        /* cpu.stat's usage lines are there without the cpu controller too (cgroup v2, 5.x). */
        if (cg_keyed_value(buf, "usage_usec", &u.cpu_usage_usec) < 0 ||
            cg_keyed_value(buf, "user_usec", &u.cpu_user_usec) < 0 ||
            cg_keyed_value(buf, "system_usec", &u.cpu_system_usec) < 0)
                return -EBADMSG;
        r = cg_read_at(cr->payload_fd, "memory.current", buf, sizeof(buf));
        if (r < 0)
                return r;
        u.memory_current_bytes = strtoull(buf, NULL, 10);
        cg_account_read(cr->payload_fd, &u.account);
        *ret = u;
        return 0;
}

int cgroup_run_set_cpu_weight(CgroupRun *cr, uint64_t weight) {
        if (cr->run_fd < 0)
                return -EBADF;
        char v[32];
        snprintf(v, sizeof(v), "%" PRIu64, weight);
        return cg_write_at(cr->run_fd, "cpu.weight", v);
}

CgroupRun *cgroup_run_free(CgroupRun *cr) {
        if (!cr)
                return NULL;
        const CgroupOps *ops = cr->cgroup->ops;
        cgroup_run_cancel_place(cr);
        cr->supervisor_fd = safe_close(cr->supervisor_fd);
        cr->payload_fd = safe_close(cr->payload_fd);
        if (ops->run_destroy)
                ops->run_destroy(cr);
        /* A scope's cgroup, leaves included, is systemd's to remove once the scope is empty: it
         * walks the tree (nftw) and removes it bottom up. Removing payload/ here as well raced that
         * walk: a leaf vanishing under it ends the walk early, the scope's rmdir then fails on the
         * remaining supervisor/, and systemd forgets the unit with its cgroup left behind (seen in
         * the systemd-tier soak: one scope in ~250 runs). Hence no run_destroy for systemd. */
        safe_close(cr->run_fd);
        free(cr);
        return NULL;
}
