/* proxy.h: the egress proxy (issue 32.2): in the daemon's io_uring loop, it serves the listener a
 * run's sandbox holds at 127.0.0.1:<port> (the only way out of the run's network namespace). Each
 * connection is one request: HTTP CONNECT (a TLS tunnel, passed through unread) or one plain HTTP
 * request (request.h). The proxy decides by the name and port asked for (policy.h), resolves the
 * name itself on the host and checks every address it resolves to again (a permitted name that
 * resolves to loopback, link-local, a private range or the metadata address is denied), connects,
 * and relays. It keeps the run's account: bytes each way and the hosts asked for, allowed or not,
 * never a path, a header or a byte of what was sent. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "exec-result.h"
#include "policy.h"
#include "ring.h"

typedef struct EgressProxy EgressProxy;
typedef struct EgressRun EgressRun;

/* Where a run finds the proxy, in its own network namespace: 127.0.0.1:3128 (squid's and most
 * proxies' port, so that a tool's default finds it too). */
#define EGRESS_PROXY_PORT 3128

/* One connection's decision, told when it is known (denied) or when the connection ends
 * (allowed): for the journal record and the counters. Strings are valid during the call. */
typedef struct EgressDecision {
        const char *run_id, *tenant;
        const char *host;      /* as asked for, normalized; "" when the request could not be read */
        uint16_t port;
        bool allowed;
        const char *reason;    /* denied: why, one sentence; allowed: NULL */
        uint64_t sent, received; /* bytes, the run's view: to the server, from the server */
} EgressDecision;
typedef void (*EgressDecisionFn)(void *userdata, const EgressDecision *d);

typedef struct EgressProxyConfig {
        Ring *ring;
        EgressDecisionFn decided; /* or NULL */
        void *userdata;
        uint64_t head_timeout_usec;    /* the request's head must have arrived within this (0: 10 s) */
        uint64_t connect_timeout_usec; /* the server must have answered the connect within this (0: 10 s) */
        unsigned max_connections;      /* at once, per run (0: 64) */
} EgressProxyConfig;

int egress_proxy_new(const EgressProxyConfig *cfg, EgressProxy **ret);
/* Frees the proxy once no run is served (egress_proxy_busy() false); -EBUSY otherwise. */
int egress_proxy_free(EgressProxy *px);
/* Whether a run's connection, or a name being resolved, still holds memory the kernel or a
 * resolver thread may write into. */
bool egress_proxy_busy(const EgressProxy *px);

/* What a run did, by host and port asked for. */
typedef struct EgressHostAccount {
        char host[EGRESS_HOST_MAX + 1];
        uint16_t port;
        bool allowed;
        unsigned connections;
        uint64_t sent, received;
} EgressHostAccount;

typedef struct EgressAccount {
        uint64_t sent, received;   /* every connection's together */
        unsigned connections, denied;
        EgressHostAccount *hosts;  /* in the order first asked for */
        size_t n_hosts;
        bool hosts_truncated;      /* more than EGRESS_ACCOUNT_HOSTS_MAX distinct ones were asked for */
} EgressAccount;
#define EGRESS_ACCOUNT_HOSTS_MAX 64

/* Serves listen_fd (a listening TCP socket, taken) for one run, deciding by a copy of policy (NULL:
 * every request is denied). run_id and tenant (may be "") are copied for the decisions. */
int egress_run_new(EgressProxy *px, int listen_fd, const EgressPolicy *policy, const char *run_id, const char *tenant,
                   EgressRun **ret);
/* The account so far: valid until the next turn of the loop or egress_run_free(). */
const EgressAccount *egress_run_account(const EgressRun *r);

/* A copy of an account (its hosts too), to tell later what a part of a run did (a Python session's
 * call). -ENOMEM. */
int egress_account_copy(const EgressAccount *a, EgressAccount *ret);
void egress_account_done(EgressAccount *a);
/* What now gained since base (a copy of the same account, earlier): the totals' differences and the
 * hosts whose connections moved, as a result says them (exec-result.h). The hosts point into now
 * (valid while it is); the array is malloc'd into *ret_hosts for the caller to free. -ENOMEM. */
int egress_account_since(const EgressAccount *now, const EgressAccount *base, ExecEgress *ret, ExecEgressHost **ret_hosts);
/* Stops accepting and ends the run's connections (their decisions are told). The memory goes once
 * the kernel has given back every buffer: later, from the loop, nothing for the caller to wait on. */
void egress_run_free(EgressRun *r);
