/* unit-fakes.h: what several unit tests fake: runs (a RunOps whose runs end when the test says),
 * the replies a JobReplyFn collects, and an initialized McpServer that makes tools/calls. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mcp.h"
#include "metrics.h"
#include "run.h"
#include "scheduler.h"

#define FAKES_MAX 32

/* The code under test only ever holds a Run *: the fake is the tests' own definition. */
struct Run {
        RunDoneFn done;
        void *userdata;
        char code[64];     /* RunParams.code, cut */
        char python[64];   /* RunParams.python, or "" */
        char env_dir[64];  /* RunParams.env_dir, or "" */
        char *stdin_data;  /* RunParams.stdin_data, whole */
        size_t n_files;
        bool user_code;
        bool killed, ended, released;
        /* How it ends, set by the test before fake_end(): run_error(), or a result whose stdout is
         * stdout_text (NULL: the code) with stderr_text and exit_code. */
        const char *error;
        const char *stdout_text, *stderr_text;
        int exit_code;
};

extern struct Run fakes[FAKES_MAX];
extern size_t n_fakes;  /* runs started, in order */
extern int start_fails; /* > 0: that many next starts fail with -ENOMEM */
extern const RunOps fake_ops;

/* Forgets every run (after checking each started one was released) and the failures to come. */
void fakes_reset(void);
/* Run i ends now, as its done() would be called from the loop; it must be released by then. */
void fake_end(size_t i);
void fake_end_with(size_t i, const char *out, int exit_code, const char *err);

typedef struct Reply {
        const void *owner;
        char *text; /* NULL: never answered (cancelled) */
} Reply;

extern Reply replies[FAKES_MAX];
extern size_t n_replies;

/* A JobReplyFn that keeps each reply in replies[]. */
void on_reply(void *owner, char *reply);
void replies_reset(void);

/* A Metrics (version 1.0.0, transport stdio) whose records go to memory: log holds them (log_len
 * bytes) as soon as they are written. */
typedef struct FakeMetrics {
        Metrics *metrics;
        FILE *stream;
        char *log;
        size_t log_len;
} FakeMetrics;

void fake_metrics_new(FakeMetrics *m);
void fake_metrics_free(FakeMetrics *m);

/* Checks s holds no job (every run started was ended and released, or never started), forgets
 * the fake runs and the replies (fakes_reset(), replies_reset()) and is done with s. */
void fake_scheduler_done(Scheduler *s);

/* What the calls are checked against: pypy3 is an interpreter a call may name. */
extern const McpLimits fake_limits;

/* A session that has answered initialize (2025-11-25). */
McpServer *fake_server_new(const McpLimits *limits);
/* A tools/call of tool with args (a JSON object) and this id, as mcp_server_handle() gives it. */
McpCall *fake_call(McpServer *s, int id, const char *tool, const char *args);
