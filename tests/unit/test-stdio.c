/* test-stdio.c: the stdio transport through its fd seam (stdio_start_fds()) on two pipes and a real
 * ring, with the scheduler's fake runs (unit-fakes.h): lines framed and answered in order, blank
 * lines, the message cap, the last line at EOF, a held message and what waits behind it (released
 * or refused), a call's answer, a client that closes its end, and stopping. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "ring.h"
#include "scheduler.h"
#include "stdio-transport.h"
#include "unit-fakes.h"
#include "unit-fixture.h"

#define INIT "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\"," \
             "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n"
#define PING(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"ping\"}"
#define LIST(id) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/list\"}"
#define EXEC(id, code) \
        "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\",\"params\":{\"name\":\"exec\"," \
        "\"arguments\":{\"code\":\"" code "\"}}}"

#define LINES_MAX 16

static Ring *ring;
static Scheduler sched;
static McpServer *mcp;
static Stdio *stdio;
static int in_fds[2] = { -EBADF, -EBADF }, out_fds[2] = { -EBADF, -EBADF };

/* What the transport wrote, cut into lines. */
static char out[1 << 16];
static size_t out_len;
static json_t *lines[LINES_MAX];
static size_t n_lines;

static void start(size_t max_message_bytes) {
        assert_int_equal(ring_new(32, &ring), 0);
        scheduler_init(&sched, &(RunEnv) {}, 4, 4);
        scheduler_set_run_ops(&sched, &fake_ops);
        mcp = mcp_server_new(&fake_limits, "1.0.0");
        assert_non_null(mcp);
        assert_int_equal(pipe2(in_fds, O_CLOEXEC), 0);
        assert_int_equal(pipe2(out_fds, O_CLOEXEC), 0);
        assert_int_equal(fcntl(out_fds[0], F_SETFL, O_NONBLOCK), 0);
        assert_int_equal(stdio_start_fds(ring, &sched, mcp, max_message_bytes, in_fds[0], out_fds[1], &stdio), 0);
}

static int setup(void **state) {
        fakes_reset();
        out_len = n_lines = 0;
        start(4096);
        return 0;
}

static void close_fd(int *fd) {
        if (*fd >= 0)
                close(*fd);
        *fd = -EBADF;
}

static int teardown(void **state) {
        stdio_cancel_io(stdio);
        for (int i = 0; i < 100 && stdio_io_busy(stdio); i++) {
                assert_int_equal(ring_run_once(ring, 10000), 0);
                stdio_cancel_io(stdio);
        }
        assert_false(stdio_io_busy(stdio));
        stdio_free(stdio);
        fakes_reset();
        scheduler_done(&sched);
        mcp = mcp_server_free(mcp);
        ring = ring_free(ring);
        for (int i = 0; i < 2; i++) {
                close_fd(&in_fds[i]);
                close_fd(&out_fds[i]);
        }
        for (size_t i = 0; i < n_lines; i++)
                json_decref(lines[i]);
        return 0;
}

static void send_text(const char *s) {
        assert_int_equal(write(in_fds[1], s, strlen(s)), (ssize_t) strlen(s));
}

/* Reads what the transport wrote so far; each whole line must be one JSON message. */
static void collect(void) {
        ssize_t n;
        while (out_fds[0] >= 0 && (n = read(out_fds[0], out + out_len, sizeof(out) - out_len)) > 0)
                out_len += (size_t) n;
        char *nl;
        while ((nl = memchr(out, '\n', out_len))) {
                size_t len = (size_t) (nl - out);
                json_error_t err;
                assert_true(n_lines < LINES_MAX);
                lines[n_lines] = json_loadb(out, len, 0, &err);
                if (!lines[n_lines])
                        fail_msg("not a JSON line: %.*s (%s)", (int) len, out, err.text);
                n_lines++;
                memmove(out, nl + 1, out_len - len - 1);
                out_len -= len + 1;
        }
}

/* Turns the loop until want lines are out (or about two seconds have passed). */
static void pump_lines(size_t want) {
        for (int i = 0; i < 200 && n_lines < want; i++) {
                assert_int_equal(ring_run_once(ring, 10000), 0);
                collect();
        }
        assert_int_equal(n_lines, want);
}

/* Turns the loop a few times: for what must not come. */
static void pump_a_little(void) {
        for (int i = 0; i < 5; i++) {
                assert_int_equal(ring_run_once(ring, 10000), 0);
                collect();
        }
}

static json_int_t line_id(size_t i) {
        assert_true(i < n_lines);
        return json_integer_value(json_object_get(lines[i], "id"));
}

static const char *line_error(size_t i) {
        assert_true(i < n_lines);
        return json_string_value(json_object_get(json_object_get(lines[i], "error"), "message"));
}

/* ---- framing -------------------------------------------------------------------------------- */

static void test_lines_in_order(void **state) {
        /* One write, blank lines between messages: each message answered once, in order. */
        send_text(INIT "\n  \n" PING(2) "\n" LIST(3) "\n");
        pump_lines(3);
        assert_int_equal(line_id(0), 1);
        assert_non_null(json_object_get(json_object_get(lines[0], "result"), "serverInfo"));
        assert_int_equal(line_id(1), 2);
        assert_int_equal(line_id(2), 3);
        assert_true(json_array_size(json_object_get(json_object_get(lines[2], "result"), "tools")) > 0);
        /* A message split across writes is one message. */
        send_text("{\"jsonrpc\":\"2.0\",");
        pump_a_little();
        assert_int_equal(n_lines, 3);
        send_text("\"id\":4,\"method\":\"ping\"}\n");
        pump_lines(4);
        assert_int_equal(line_id(3), 4);
        assert_false(stdio_finished(stdio)); /* input goes on */
}

static void test_oversize(void **state) {
        teardown(state);
        fakes_reset();
        out_len = n_lines = 0;
        start(64);
        char big[200];
        memset(big, 'x', sizeof(big) - 2);
        big[sizeof(big) - 2] = '\n';
        big[sizeof(big) - 1] = '\0';
        send_text(big);
        send_text(PING(7) "\n");
        pump_lines(2);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(lines[0], "error"), "code")), -32600);
        assert_non_null(strstr(line_error(0), "longer than 64 bytes (MCP_EXEC_MAX_MESSAGE_BYTES)"));
        assert_int_equal(line_id(1), 7); /* the next line is read as usual */
}

static void test_eof(void **state) {
        /* The last line needs no newline; at EOF with nothing in flight the transport is done. */
        send_text(PING(5));
        close_fd(&in_fds[1]);
        pump_lines(1);
        assert_int_equal(line_id(0), 5);
        for (int i = 0; i < 50 && !stdio_finished(stdio); i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_true(stdio_finished(stdio));
        assert_false(stdio_client_gone(stdio));
}

/* ---- calls ---------------------------------------------------------------------------------- */

static void test_call_answered(void **state) {
        send_text(INIT EXEC(2, "print(2)") "\n");
        close_fd(&in_fds[1]);
        pump_lines(1);
        for (int i = 0; i < 50 && n_fakes == 0; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(n_fakes, 1);
        assert_string_equal(fakes[0].code, "print(2)");
        pump_a_little();
        assert_false(stdio_finished(stdio)); /* input is over, the call is not */
        fake_end_with(0, "2\n", 0, "");
        pump_lines(2);
        assert_int_equal(line_id(1), 2);
        json_t *sc = json_object_get(json_object_get(lines[1], "result"), "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "2\n");
        for (int i = 0; i < 50 && !stdio_finished(stdio); i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_true(stdio_finished(stdio));
}

/* The client closes its end of stdout: the call in flight is cancelled, never answered. */
static void test_client_gone(void **state) {
        send_text(INIT EXEC(2, "sleep") "\n");
        pump_lines(1);
        for (int i = 0; i < 50 && n_fakes == 0; i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_int_equal(n_fakes, 1);
        close_fd(&out_fds[0]);
        for (int i = 0; i < 100 && !stdio_client_gone(stdio); i++)
                assert_int_equal(ring_run_once(ring, 10000), 0);
        assert_true(stdio_client_gone(stdio));
        assert_true(fakes[0].killed);
        assert_false(stdio_finished(stdio)); /* until its run is over */
        fake_end(0);
        assert_true(stdio_finished(stdio));
}

/* ---- held messages -------------------------------------------------------------------------- */

/* Until the session is released, tools/list waits, and so does everything read after it. */
static void test_hold_release(void **state) {
        mcp_server_hold(mcp);
        send_text(INIT LIST(2) "\n" PING(3) "\n");
        pump_lines(1); /* initialize is answered at once */
        pump_a_little();
        assert_int_equal(n_lines, 1);
        assert_int_equal(mcp_server_release(mcp, "3.11.2", ""), 0);
        stdio_release(stdio);
        pump_lines(3);
        assert_int_equal(line_id(1), 2);
        assert_non_null(json_object_get(json_object_get(lines[1], "result"), "tools"));
        assert_int_equal(line_id(2), 3);
}

static void test_hold_refuse(void **state) {
        mcp_server_hold(mcp);
        send_text(INIT LIST(2) "\n" PING(3) "\n");
        pump_lines(1);
        pump_a_little();
        assert_int_equal(mcp_server_refuse(mcp, "the sandbox is not available"), 0);
        stdio_refuse_held(stdio);
        pump_lines(3);
        assert_int_equal(line_id(1), 2);
        assert_non_null(strstr(line_error(1), "the sandbox is not available"));
        assert_int_equal(line_id(2), 3); /* what was read after it is answered too */
        /* Nothing more is read. */
        send_text(PING(4) "\n");
        pump_a_little();
        assert_int_equal(n_lines, 3);
}

static void test_stop_reading(void **state) {
        send_text(INIT);
        pump_lines(1);
        stdio_stop_reading(stdio);
        send_text(PING(2) "\n");
        pump_a_little();
        assert_int_equal(n_lines, 1); /* input not read gets no answer */
        assert_true(stdio_finished(stdio));
}

int main(void) {
        /* A write to a pipe whose reader is gone must fail with EPIPE, not kill the test (as the daemon). */
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                fixture_test(test_lines_in_order),
                fixture_test(test_oversize),
                fixture_test(test_eof),
                fixture_test(test_call_answered),
                fixture_test(test_client_gone),
                fixture_test(test_hold_release),
                fixture_test(test_hold_refuse),
                fixture_test(test_stop_reading),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
