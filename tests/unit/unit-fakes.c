/* unit-fakes.c: the fakes of unit-fakes.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "unit-fakes.h"
#include "unit-mcp.h"

struct Run fakes[FAKES_MAX];
size_t n_fakes;
int start_fails;
Reply replies[FAKES_MAX];
size_t n_replies;

static int fake_start(const RunEnv *env, const RunParams *p, RunDoneFn done, void *userdata, Run **ret) {
        if (start_fails > 0) {
                start_fails--;
                return -ENOMEM;
        }
        assert_true(n_fakes < FAKES_MAX);
        struct Run *run = &fakes[n_fakes++];
        *run = (struct Run) { .done = done, .userdata = userdata, .user_code = p->user_code, .n_files = p->n_files };
        snprintf(run->code, sizeof(run->code), "%.*s", (int) p->code_len, p->code);
        snprintf(run->python, sizeof(run->python), "%s", p->python ?: "");
        snprintf(run->env_dir, sizeof(run->env_dir), "%s", p->env_dir ?: "");
        run->stdin_data = strndup(p->stdin_data ?: "", p->stdin_len);
        assert_non_null(run->stdin_data);
        *ret = run;
        return 0;
}

static void fake_kill(Run *run) {
        /* Like run_kill(): done() follows later, never from inside. */
        run->killed = true;
}

static const char *fake_error(const Run *run) {
        return run->error;
}

static void fake_result(const Run *run, ExecResult *ret) {
        const char *out = run->stdout_text ?: run->code, *err = run->stderr_text ?: "";
        *ret = (ExecResult) { .stdout_data = out, .stdout_len = strlen(out), .stderr_data = err,
                                 .stderr_len = strlen(err), .exit_code = run->exit_code, .limits = "rlimit",
                                 .run_id = "fake" };
}

static const char *fake_id(const Run *run) {
        return "fake";
}

static const char *fake_unit(const Run *run) {
        return NULL;
}

static uint64_t fake_place_usec(const Run *run) {
        return 0;
}

static void fake_release(Run *run) {
        assert_true(run->ended);
        assert_false(run->released);
        run->released = true;
}

const RunOps fake_ops = {
        .start = fake_start,
        .kill = fake_kill,
        .error = fake_error,
        .result = fake_result,
        .id = fake_id,
        .unit = fake_unit,
        .place_usec = fake_place_usec,
        .release = fake_release,
};

void fakes_reset(void) {
        for (size_t i = 0; i < n_fakes; i++) {
                assert_true(fakes[i].released);
                free(fakes[i].stdin_data);
        }
        n_fakes = 0;
        start_fails = 0;
}

void fake_end(size_t i) {
        assert_true(i < n_fakes);
        struct Run *run = &fakes[i];
        assert_false(run->ended);
        run->ended = true;
        run->done(run, run->userdata);
        assert_true(run->released);
}

void fake_end_with(size_t i, const char *out, int exit_code, const char *err) {
        assert_true(i < n_fakes);
        fakes[i].stdout_text = out;
        fakes[i].exit_code = exit_code;
        fakes[i].stderr_text = err;
        fake_end(i);
}

void on_reply(void *owner, char *reply) {
        assert_true(n_replies < FAKES_MAX);
        replies[n_replies++] = (Reply) { .owner = owner, .text = reply };
}

void replies_reset(void) {
        for (size_t i = 0; i < n_replies; i++)
                free(replies[i].text);
        n_replies = 0;
}

void fake_metrics_new(FakeMetrics *m) {
        *m = (FakeMetrics) {};
        m->stream = open_memstream(&m->log, &m->log_len);
        assert_non_null(m->stream);
        assert_int_equal(metrics_new("1.0.0", "stdio", m->stream, &m->metrics), 0);
}

void fake_metrics_free(FakeMetrics *m) {
        m->metrics = metrics_free(m->metrics);
        fclose(m->stream);
        free(m->log);
        *m = (FakeMetrics) {};
}

void fake_scheduler_done(Scheduler *s) {
        assert_int_equal(s->n_running, 0);
        assert_int_equal(s->n_queued, 0);
        fakes_reset();
        replies_reset();
        scheduler_done(s);
}

const McpLimits fake_limits = {
        .default_timeout_s = 30,
        .max_timeout_s = 60,
        .max_code_bytes = 1000,
        .max_stdin_bytes = 1000,
        .limits_by = "rlimit",
        .pythons = "python3,pypy3",
};

McpServer *fake_server_new(const McpLimits *limits) {
        return unit_server_new(limits, "1.0.0");
}

McpCall *fake_call(McpServer *s, int id, const char *tool, const char *args) {
        _cleanup_free_ char *msg = NULL;
        assert_true(asprintf(&msg,
                             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
                             "\"arguments\":%s}}",
                             id, tool, args) > 0);
        return unit_server_call(s, msg);
}
