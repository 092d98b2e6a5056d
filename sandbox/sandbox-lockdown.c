/* sandbox-lockdown.c: what the Python child gives up last before execve (rlimits, capabilities,
 * no_new_privs, seccomp), and the seccomp filter, built once at start. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stddef.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "sandbox-internal.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* Compared with Docker's default seccomp profile (moby profiles/seccomp/default.json, as of
 * issue 15; x86_64, a container without added capabilities). Docker allows a list and refuses the
 * rest with EPERM; we allow all and refuse a list, so a syscall newer than libseccomp (2.5.4 knows
 * nothing past 453 here) is refused by Docker and allowed by us. There are two filters, built
 * once: every run's, and the egress runs' (SandboxRunSpec.egress_port), which differs in socket()
 * alone (marked "egress" below). Every difference:
 *
 * Docker allows, we refuse:
 *   ptrace, process_vm_readv, process_vm_writev  the run's PID 1 and its Python share a uid, so
 *                             only ptrace's own checks would stand between them; Docker accepts that
 *   io_uring_setup/enter/register  their ops (IORING_OP_SOCKET, OPENAT…) bypass the per-syscall
 *                             rules here (later Docker releases refuse them too)
 *   memfd_secret              see denied_eperm
 *   name_to_handle_at         half of the "shocker" pair; nothing in Python uses it
 *   modify_ldt                16-bit segments: old exploit surface, no use in a 64-bit Python
 *   adjtimex, clock_adjtime   even the read-only forms: not needed (time.clock_* read via vDSO)
 *   personality(x) for x in PER_LINUX32, UNAME26, both  only the query 0xffffffff is allowed
 *   socket(AF_*) but AF_UNIX  Docker refuses only AF_VSOCK; a run has no network at all
 *   egress: socket(AF_*) but AF_UNIX, AF_INET, AF_INET6  (EAFNOSUPPORT) and, in AF_INET and
 *                             AF_INET6, every type but SOCK_STREAM and every protocol but 0 and
 *                             IPPROTO_TCP (EPROTONOSUPPORT): TCP is all an egress run needs, to reach
 *                             the daemon's proxy on its lo; no UDP (QUIC, DNS), ICMP, raw, SCTP or
 *                             MPTCP, no netlink, packet, vsock, AF_ALG…
 *   egress: setsockopt(SOL_TCP, TCP_ULP)  kernel TLS and the other upper-layer protocols: code an
 *                             egress run does not need, with a history (CVE-2023-0461) (EPERM)
 *   socketpair(AF_*) but AF_UNIX  Docker allows every family (egress runs too)
 *   ioctl(TIOCSTI, TIOCLINUX)  Docker allows every ioctl
 *   prlimit64(pid ≠ 0, …, new ≠ NULL)  setting another process's limits: the run's PID 1 shares
 *                             an unprivileged daemon's uid (seccomp_rules_add() says why)
 *
 * We allow, Docker refuses:
 *   get_mempolicy, mbind, set_mempolicy, set_mempolicy_home_node  NUMA placement of the run's own
 *                             pages only (libnuma and NUMA-aware allocators ask); Docker wants
 *                             CAP_SYS_NICE
 *   cachestat, fchmodat2, map_shadow_stack, futex_wake/wait/requeue (451–456)  newer than this
 *                             profile; ordinary file, futex and shadow-stack calls on the run's own
 *                             objects
 *   statmount, listmount, lsm_*_self_attr, lsm_list_modules, mseal, *xattrat, open_tree_attr
 *                             (457–467): unknown to libseccomp 2.5.4, so not refused by name.
 *                             statmount/listmount show only the run's own mount namespace;
 *                             open_tree_attr with OPEN_TREE_CLONE needs CAP_SYS_ADMIN, which the
 *                             run has dropped in every set; it is listed in denied_eperm and
 *                             refused wherever libseccomp knows it
 *
 * Both refuse (Docker: not listed, or only with a capability we drop): mount and the new mount
 * API, pivot_root, chroot, unshare, setns, clone/clone3 with namespace flags, keyctl, add_key,
 * request_key, bpf, perf_event_open, userfaultfd, kexec_*, *_module, acct, swapon/off, reboot,
 * settimeofday, clock_settime, sethostname, setdomainname, syslog, quotactl*, vhangup,
 * lookup_dcookie, open_by_handle_at, iopl, ioperm, migrate_pages, move_pages, kcmp, pidfd_getfd,
 * process_madvise, fanotify_init, uselib, ustat, sysfs, _sysctl, nfsservctl. Docker's ia32 and x32
 * sub-architectures are refused outright here (SCMP_FLTATR_ACT_BADARCH). */

/* Refused with EPERM, whatever the arguments. Each is either a way out of the namespaces, a way
 * into the kernel's or another process's state, or attack surface Python never needs. */
static const char *const denied_eperm[] = {
        /* Another process's memory and fds: what the pid namespace and uid separation protect. */
        "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp",
        /* Mount table and namespaces: the view of the system is built once, before exec. */
        "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
        "fsmount", "fspick", "mount_setattr", "open_tree_attr", "unshare", "setns",
        /* Kernel keyrings are not namespaced per run (shared with the host's user). */
        "keyctl", "add_key", "request_key",
        /* eBPF, perf and userfaultfd: the usual kernel-exploit entry points. */
        "bpf", "perf_event_open", "userfaultfd",
        /* Kernel images and modules. */
        "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
        /* io_uring: IORING_OP_SOCKET, IORING_OP_OPENAT… bypass the per-syscall checks below. */
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        /* Host-wide state: accounting, swap, power, clocks, hostname, kernel log, quotas. */
        "acct", "swapon", "swapoff", "reboot", "settimeofday", "clock_settime", "clock_adjtime",
        "adjtimex", "sethostname", "setdomainname", "syslog", "quotactl", "quotactl_fd",
        "vhangup", "lookup_dcookie",
        /* File handles bypass path permissions (the "shocker" container escape). */
        "open_by_handle_at", "name_to_handle_at",
        /* Raw port I/O, LDT, NUMA page moves of other processes, obsolete interfaces. */
        "iopl", "ioperm", "modify_ldt", "migrate_pages", "move_pages", "uselib", "ustat", "sysfs",
        "fanotify_init", "nfsservctl", "_sysctl",
        /* Memory hidden even from the kernel's direct map: nothing Python needs, and a way to pin
         * memory that the cgroup's accounting and the OOM killer see differently (issue 15). */
        "memfd_secret",
};

/* Namespace flags that clone() must not carry (clone3 is refused outright, so these are the
 * only way to ask for a namespace at creation). CLONE_NEWTIME is not a clone() flag (bit 7 is
 * part of the exit signal there). */
static const uint64_t clone_ns_flags[] = {
        CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

/* Egress runs (SandboxRunSpec.egress_port): socket() families the filter lets through. Everything
 * between and around them is refused: lowest and highest by a range, the gaps one by one. */
static const int egress_families[] = { AF_UNIX, AF_INET, AF_INET6 };
/* ...and within AF_INET and AF_INET6, the protocols a SOCK_STREAM socket may ask for. IPPROTO_IP
 * (0) is what everyone passes and means TCP for SOCK_STREAM; IPPROTO_SCTP and IPPROTO_MPTCP are
 * SOCK_STREAM protocols too, and refused. */
static const int egress_stream_protocols[] = { IPPROTO_IP, IPPROTO_TCP };

/* The socket() rules of an egress run: TCP over IPv4 and IPv6 besides AF_UNIX, nothing else.
 * libseccomp 2.5 takes one comparison per argument in a rule (several arguments are ANDed), so
 * "not in the set" is several ERRNO rules, each for a range or a value outside it.
 *
 * The family (A0) and the protocol (A2) are compared on all 64 bits, as the rule for runs without
 * egress does: an int with garbage in its upper half (glibc sign-extends, the kernel truncates) is
 * never one of the allowed values, so it is refused, never let through. The type (A1) is compared
 * on its low four bits, which are what the kernel reads as the type (SOCK_TYPE_MASK); the flags
 * above them (SOCK_NONBLOCK, SOCK_CLOEXEC) are the kernel's to check. Every other value of those
 * four bits is refused, the kernel's unknown ones too.
 *
 * Errnos: a family, EAFNOSUPPORT as without egress. A type or protocol of AF_INET or AF_INET6,
 * EPROTONOSUPPORT: the family does work (for TCP), and EAFNOSUPPORT would say IPv4 or IPv6 is
 * missing altogether, which a program probing with a UDP socket (IPv6 probes, happy eyeballs,
 * DNS) could take as "no network" for TCP too; EPROTONOSUPPORT is what the kernel itself answers
 * for a protocol the family lacks (SCTP without its module). One errno for both, so that the type
 * and protocol rules, which overlap (SOCK_DGRAM with IPPROTO_UDP matches both), agree. */
static int seccomp_egress_socket_rules_add(scmp_filter_ctx ctx) {
        int socket_nr = SCMP_SYS(socket);
        int r;

        int lowest = egress_families[0], highest = egress_families[ELEMENTSOF(egress_families) - 1];
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), socket_nr, 1, SCMP_A0(SCMP_CMP_LT, lowest));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), socket_nr, 1,
                                     SCMP_A0(SCMP_CMP_GT, highest));
        for (size_t i = 0; r >= 0 && i + 1 < ELEMENTSOF(egress_families); i++)
                for (int family = egress_families[i] + 1; r >= 0 && family < egress_families[i + 1]; family++)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), socket_nr, 1,
                                             SCMP_A0(SCMP_CMP_EQ, family));
        if (r < 0)
                return r;

        /* Protocols: above the highest allowed, and the gaps (the lowest, IPPROTO_IP, is 0: there is
         * nothing below it). */
        static const int inet_families[] = { AF_INET, AF_INET6 };
        int protocol_highest = egress_stream_protocols[ELEMENTSOF(egress_stream_protocols) - 1];
        for (size_t i = 0; i < ELEMENTSOF(inet_families); i++) {
                struct scmp_arg_cmp family = SCMP_A0(SCMP_CMP_EQ, inet_families[i]);
                for (unsigned type = 0; r >= 0 && type <= 0xf; type++)
                        if (type != SOCK_STREAM)
                                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), socket_nr, 2, family,
                                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, type));
                if (r >= 0)
                        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), socket_nr, 2, family,
                                             SCMP_A2(SCMP_CMP_GT, protocol_highest));
                for (size_t j = 0; r >= 0 && j + 1 < ELEMENTSOF(egress_stream_protocols); j++)
                        for (int p = egress_stream_protocols[j] + 1; r >= 0 && p < egress_stream_protocols[j + 1]; p++)
                                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), socket_nr, 2, family,
                                                     SCMP_A2(SCMP_CMP_EQ, p));
                if (r < 0)
                        return r;
        }
        /* A TCP socket may not take an upper-layer protocol (kTLS, espintcp, mptcp's): plain
         * bytes to the proxy are all it is for. */
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setsockopt), 2, SCMP_A1(SCMP_CMP_EQ, SOL_TCP),
                                SCMP_A2(SCMP_CMP_EQ, TCP_ULP));
}

static int seccomp_rules_add(scmp_filter_ctx ctx, bool egress, const char **reterr_what) {
        int r;

        for (size_t i = 0; i < ELEMENTSOF(denied_eperm); i++) {
                int nr = seccomp_syscall_resolve_name(denied_eperm[i]);
                if (nr == __NR_SCMP_ERROR)
                        continue; /* not a syscall of this architecture */
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0) {
                        *reterr_what = denied_eperm[i];
                        return r;
                }
        }

        /* clone3 passes its flags in memory, which BPF cannot read: ENOSYS makes glibc (pthreads,
         * posix_spawn) fall back to clone(), whose flags are checked here. */
        *reterr_what = "clone3";
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return r;
        *reterr_what = "clone";
        for (size_t i = 0; i < ELEMENTSOF(clone_ns_flags); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, clone_ns_flags[i], clone_ns_flags[i]));
                if (r < 0)
                        return r;
        }

        /* No network but AF_UNIX (the run has its own network namespace with only a down lo; this
         * also closes netlink, packet, vsock, AF_ALG, bluetooth… attack surface). socketpair() too:
         * the kernel creates the first socket of the pair (and may auto-load the family's module)
         * before it asks the family for a pair (net/socket.c, __sys_socketpair), so AF_INET,
         * AF_NETLINK, AF_PACKET, AF_VSOCK, AF_XDP reach socket creation unless refused here.
         * multiprocessing and asyncio only make AF_UNIX pairs. No socketcall(): that is the ia32
         * ABI, which kills the run. An egress run's socket() also makes TCP sockets
         * (seccomp_egress_socket_rules_add()); its socketpair() stays AF_UNIX: no family but AF_UNIX
         * has pairs. */
        static const char *const socket_calls[] = { "socket", "socketpair" };
        for (size_t i = 0; i < ELEMENTSOF(socket_calls); i++) {
                *reterr_what = socket_calls[i];
                if (egress && strcmp(socket_calls[i], "socket") == 0) {
                        r = seccomp_egress_socket_rules_add(ctx);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
                                     seccomp_syscall_resolve_name(socket_calls[i]), 1,
                                     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
                if (r < 0)
                        return r;
        }

        /* Faking terminal input into whatever shares a tty (CVE-2017-5226; only the low 32 bits
         * count, CVE-2019-10063). The run has no tty, this is belt and braces. */
        *reterr_what = "ioctl";
        static const unsigned long tty_ioctls[] = { TIOCSTI, TIOCLINUX };
        for (size_t i = 0; i < ELEMENTSOF(tty_ioctls); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, tty_ioctls[i]));
                if (r < 0)
                        return r;
        }

        /* personality(): only the query (0xffffffff). READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE and
         * friends weaken the exploit mitigations of whatever is exec'd next. Setting PER_LINUX (0)
         * is refused too: the run's persona is already that and nothing can have changed it (one
         * comparison per argument is all libseccomp 2.5 takes in a rule). */
        *reterr_what = "personality";
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality), 1,
                             SCMP_A0(SCMP_CMP_NE, 0xffffffffu));
        if (r < 0)
                return r;

        /* prlimit64() setting another process's limits: an unprivileged daemon's run shares its
         * PID 1's uid, which is all the kernel asks, and could set sandbox-init's (RLIMIT_NOFILE 0:
         * no /proc to read the run's account from; RLIMIT_CPU: its end). The run's own (pid 0, as
         * glibc's setrlimit() passes it) and reading any are left. */
        *reterr_what = "prlimit64";
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_NE, 0),
                             SCMP_A2(SCMP_CMP_NE, 0));
        if (r < 0)
                return r;

        *reterr_what = NULL;
        return 0;
}

/* Builds one filter with libseccomp and keeps its BPF in memory, so the child only makes one
 * seccomp() syscall (no allocation, no libseccomp, after the fork). libseccomp 2.5 exports to an
 * fd only: a memfd. */
static int seccomp_program_build(bool egress, struct sock_filter **ret_bpf, size_t *ret_len,
                                 const char **reterr_what) {
        int r;

        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;

        /* x32 and ia32 system calls would bypass every rule above (other numbers, socketcall):
         * a non-native ABI kills the whole process. */
        r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
        if (r >= 0)
                r = seccomp_rules_add(ctx, egress, reterr_what);

        _cleanup_close_ int fd = -EBADF;
        if (r >= 0) {
                fd = memfd_create("sandbox-seccomp", MFD_CLOEXEC);
                r = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
        }
        seccomp_release(ctx);

        struct stat st;
        if (r >= 0 && fstat(fd, &st) < 0)
                r = -errno;
        if (r >= 0 && (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
                       st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS))
                r = -EINVAL;
        if (r < 0)
                return r;
        _cleanup_free_ struct sock_filter *bpf = malloc((size_t) st.st_size);
        if (!bpf)
                return -ENOMEM;
        if (pread(fd, bpf, (size_t) st.st_size, 0) != st.st_size)
                return -EIO;
        *ret_bpf = TAKE_PTR(bpf);
        *ret_len = (size_t) st.st_size / sizeof(struct sock_filter);
        return 0;
}

/* Both filters, once: every run's, and the egress runs' (SandboxRunSpec.egress_port), which differs
 * only in socket(). */
int sandbox_seccomp_build(Sandbox *s, char **reterr_reason) {
        const char *what = NULL;
        bool egress = false;
        int r = seccomp_program_build(false, &s->seccomp_bpf, &s->seccomp_len, &what);
        if (r >= 0) {
                egress = true;
                r = seccomp_program_build(true, &s->seccomp_egress_bpf, &s->seccomp_egress_len, &what);
        }
        if (r < 0 && reterr_reason) {
                char *m = NULL;
                if (asprintf(&m, "cannot build the seccomp filter%s%s%s: %s", egress ? " of egress runs" : "",
                             what ? " at " : "", what ?: "", strerror(-r)) >= 0)
                        *reterr_reason = m;
        }
        return r;
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

/* rlimit mode only (no cgroup: nothing charges kernel memory to the run). SysV shared memory,
 * message queues and semaphores and POSIX message queues live in the run's IPC namespace but are
 * bounded only by its sysctls (kernel.shmall: about 8 EiB by default), and those can only be
 * lowered by uid 0 of the run's user namespace, which is not mapped (the run is 65532 alone, see
 * sandbox_id_maps_write()). So they are refused: CPython and the scientific stack use none of
 * them (multiprocessing and its locks do not). ENOSPC is what
 * shmget(2), msgget(2), semget(2) and mq_open(3) return when a limit is reached. With a cgroup,
 * the segments are charged to the run's memory.max and stay allowed. Static and allocation-free:
 * loaded in the child, stacked on the main filter (which already refuses foreign ABIs; here a
 * foreign arch falls through to it). */
#if defined(__x86_64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SANDBOX_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif
#ifdef SANDBOX_AUDIT_ARCH
static const struct sock_filter ipc_refuse_bpf[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_AUDIT_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_shmget, 4, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_msgget, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_semget, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mq_open, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSPC & SECCOMP_RET_DATA)),
};
#endif

static int rlimit_set(SpawnPlan *plan, int resource, uint64_t value, const char *name) {
        struct rlimit rl = { .rlim_cur = value, .rlim_max = value };
        if (setrlimit(resource, &rl) < 0)
                return fail(plan, "setrlimit ", name);
        return 0;
}

int sandbox_lockdown(SpawnPlan *plan) {
        const SandboxConfig *c = &plan->sandbox->config;
        int r;

        /* Always: no core files (a crash must not write a copy of the run's memory anywhere), a
         * bounded fd table, and no file larger than the run's /tmp could hold anyway. */
        r = rlimit_set(plan, RLIMIT_CORE, 0, "RLIMIT_CORE");
        if (r >= 0)
                r = rlimit_set(plan, RLIMIT_NOFILE, SANDBOX_NOFILE_MAX, "RLIMIT_NOFILE");
        if (r >= 0)
                r = rlimit_set(plan, RLIMIT_FSIZE, plan->tmp_size_bytes, "RLIMIT_FSIZE");
        /* The run's shares of its creator's per-user budgets (sandbox_shares_compute()): message
         * queue bytes and queued signals are charged up to the daemon's user, checked against these
         * at the run's level. Always, cgroup or not: no cgroup controller counts them. */
        if (r >= 0)
                r = rlimit_set(plan, RLIMIT_MSGQUEUE, plan->sandbox->msgqueue_bytes, "RLIMIT_MSGQUEUE");
        if (r >= 0)
                r = rlimit_set(plan, RLIMIT_SIGPENDING, plan->sandbox->sigpending, "RLIMIT_SIGPENDING");
        if (r < 0)
                return r;

        /* Only when no cgroup enforces limits. RLIMIT_NPROC is counted per (user namespace, uid)
         * since Linux 5.14 (ucounts), and every run has its own user namespace: the limit is per
         * run, not shared by all runs of host uid 65532 (unprivileged, the init shares the run's
         * host uid and counts too). */
        if (plan->rlimits) {
                if (c->rlimit_as_bytes > 0)
                        r = rlimit_set(plan, RLIMIT_AS, c->rlimit_as_bytes, "RLIMIT_AS");
                if (r >= 0 && c->rlimit_nproc > 0)
                        r = rlimit_set(plan, RLIMIT_NPROC, c->rlimit_nproc, "RLIMIT_NPROC");
                if (r >= 0 && c->rlimit_cpu_sec > 0)
                        r = rlimit_set(plan, RLIMIT_CPU, c->rlimit_cpu_sec, "RLIMIT_CPU");
                if (r < 0)
                        return r;
        }

        r = caps_drop_all(plan);
        if (r < 0)
                return r;

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return fail(plan, "PR_SET_NO_NEW_PRIVS", NULL);

        struct sock_fprog prog = {
                .len = (unsigned short) plan->sandbox->seccomp_len,
                .filter = plan->sandbox->seccomp_bpf,
        };
        if (plan->egress_port != 0)
                prog = (struct sock_fprog) {
                        .len = (unsigned short) plan->sandbox->seccomp_egress_len,
                        .filter = plan->sandbox->seccomp_egress_bpf,
                };
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
                return fail(plan, "seccomp", NULL);
#ifdef SANDBOX_AUDIT_ARCH
        if (plan->rlimits) {
                struct sock_fprog ipc = {
                        .len = (unsigned short) ELEMENTSOF(ipc_refuse_bpf),
                        .filter = (struct sock_filter *) ipc_refuse_bpf,
                };
                if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &ipc) < 0)
                        return fail(plan, "seccomp (IPC in rlimit mode)", NULL);
        }
#endif
        return 0;
}
