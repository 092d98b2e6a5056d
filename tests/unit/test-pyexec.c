/* test-pyexec.c: pyexec through its run seam (pyexec_set_run_ops, the scheduler's likewise): fake
 * helper runs (unit-fakes.h) that answer what the test says, on a real ring for the turn each call waits. The
 * interpreters' probe, each Python tool's steps to its answer or its run, the interpreter refused,
 * check_environment, a session_open's preparation, and cancellation and shutdown mid-step. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "pyexec.h"
#include "ring.h"
#include "scheduler.h"
#include "unit-fakes.h"
#include "unit-fixture.h"
#include "unit-mcp.h"

/* An interpreter that exists (the build needs it) and one that does not. */
#define PY3 "/usr/bin/python3"
#define PYPY_MISSING "/nonexistent/pypy3"

/* The result of reply i (isError as is_error says); a new reference. */
static json_t *reply_result(size_t i, bool is_error) {
        assert_true(i < n_replies);
        return unit_reply_result(replies[i].text, is_error);
}

/* Reply i is a tool error whose text contains want. */
static void expect_tool_error(size_t i, const char *want) {
        _cleanup_(json_decrefp) json_t *result = reply_result(i, true);
        const char *text = unit_result_text(result);
        if (!strstr(text, want))
                fail_msg("tool error \"%s\" does not contain \"%s\"", text, want);
}

/* ---- fixture -------------------------------------------------------------------------------- */

static McpServer *server;
static Ring *ring;
static Cgroup *cgroup;
static Config config;
static Scheduler sched;
static PyExec *px;
static int next_id;
static int owner_a, owner_b;
static int probed_calls, probed_r;
static const char *env_pythons; /* MCP_EXEC_PYTHONS for the next setup */

static char *fake_getenv(const char *name) {
        if (strcmp(name, "MCP_EXEC_PYTHONS") == 0)
                return (char *) env_pythons;
        if (strcmp(name, "MCP_EXEC_PY_SESSIONS_MAX") == 0)
                return (char *) "3";
        return NULL;
}

static void on_probed(void *userdata, int r) {
        probed_calls++;
        probed_r = r;
}

static unsigned sessions_count(const void *userdata) {
        return 2;
}

/* What the probe of python3 says: CPython with the metadata tools and two packages. */
#define PROBE_OK \
        "{\"version\":\"3.11.2\",\"implementation\":\"cpython\",\"packages\":[\"PyYAML\",\"numpy\"]," \
        "\"metadata_tools\":true,\"launcher_pyc\":\"AAEC\"}"

static int setup(void **state) {
        server = fake_server_new(&fake_limits);
        assert_int_equal(ring_new(32, &ring), 0);
        _cleanup_free_ char *why = NULL;
        assert_int_equal(cgroup_new(&(CgroupConfig) { .want = CGROUP_WANT_NONE }, &cgroup, &why), 0);
        _cleanup_free_ char *err = NULL;
        if (!env_pythons)
                env_pythons = "python3=" PY3 ",pypy3=" PYPY_MISSING;
        assert_int_equal(config_load(fake_getenv, &config, &err), 0);

        RunEnv env = { .ring = ring, .python = PY3, .python_name = "python3", .max_output_bytes = 1000 };
        assert_int_equal(pyexec_new(&env, &config, cgroup, "1.2.3", &px), 0);
        pyexec_set_run_ops(px, &fake_ops);
        scheduler_init(&sched, &env, 4, 4);
        scheduler_set_run_ops(&sched, &fake_ops);
        pyexec_attach(px, &sched);
        assert_int_equal(scheduler_route(&sched, &pyexec_route_vtable, px), 0);
        fakes_reset();
        replies_reset();
        next_id = 0; /* the calls' ids, and so their id keys, are 1, 2, … in each test */
        probed_calls = 0;
        probed_r = 1;
        return 0;
}

static int teardown(void **state) {
        assert_false(pyexec_busy(px));
        fakes_reset();
        replies_reset();
        scheduler_done(&sched);
        px = pyexec_free(px);
        config_done(&config);
        cgroup = cgroup_free(cgroup);
        ring = ring_free(ring);
        server = mcp_server_free(server);
        env_pythons = NULL;
        return 0;
}

/* The probe, answered as probe_out says (exit 0) or failing (exit 1, stderr "boom"). */
static void probe(const char *probe_out) {
        assert_int_equal(pyexec_probe_start(px, on_probed, NULL), 0);
        assert_true(pyexec_busy(px));
        /* python3 is the default, the tools interpreter and exec's: one path, one probe. */
        assert_int_equal(n_fakes, 1);
        assert_string_equal(fakes[0].python, PY3);
        assert_false(fakes[0].user_code);
        assert_int_equal(fakes[0].n_files, 1); /* exec's interpreter compiles the launcher */
        fake_end_with(0, probe_out ?: "", probe_out ? 0 : 1, probe_out ? "" : "boom");
        assert_int_equal(probed_calls, 1);
        assert_int_equal(probed_r, 0);
        assert_false(pyexec_busy(px));
}

static McpCall *call_of(const char *tool, const char *args) {
        return fake_call(server, ++next_id, tool, args);
}

/* Submits through the route table as the transports do, then lets the loop turn once: the call's
 * first step runs from the loop, never from inside submit. */
static void submit(const char *tool, const char *args, void *owner) {
        size_t before = n_replies;
        assert_int_equal(scheduler_submit(&sched, call_of(tool, args), owner, on_reply), 0);
        assert_int_equal(n_replies, before);
        assert_int_equal(ring_run_once(ring, 1000000), 0);
}

/* ---- the probe ------------------------------------------------------------------------------ */

static void test_probe(void **state) {
        assert_null(pyexec_version(px)); /* nothing before the probe has answered */
        assert_string_equal(pyexec_names(px), "python3,pypy3");
        assert_null(pyexec_sources(px)); /* no dependency source configured */
        probe(PROBE_OK);
        assert_string_equal(pyexec_version(px), "3.11.2");
        assert_string_equal(pyexec_packages(px), "PyYAML, numpy");
        const RunLauncherCode *lc = pyexec_launcher_code(px);
        assert_non_null(lc);
        assert_int_equal(lc->pyc_len, 3); /* "AAEC" is base64 for 00 01 02 */
        assert_memory_equal(lc->pyc, "\x00\x01\x02", 3);
}

static void test_probe_failed(void **state) {
        probe(NULL);
        assert_null(pyexec_version(px));
        assert_null(pyexec_launcher_code(px));
        /* The interpreter is refused with why. */
        submit("execute_python", "{\"script\":\"print(1)\"}", &owner_a);
        assert_int_equal(n_fakes, 1);
        expect_tool_error(0, "the interpreter 'python3' cannot be used: the interpreter probe failed (exit code 1): boom");
}

/* ---- the tools ------------------------------------------------------------------------------ */

static void test_exec_naming_interpreter(void **state) {
        probe(PROBE_OK);
        /* A missing one is refused, naming it and why. */
        submit("exec", "{\"code\":\"x\",\"python\":\"pypy3\"}", &owner_a);
        expect_tool_error(0, "the interpreter 'pypy3' cannot be used: '" PYPY_MISSING "' was not found");
        /* A usable one goes to the run queue with its path: nothing else to prepare. */
        submit("exec", "{\"code\":\"x\",\"python\":\"python3\"}", &owner_a);
        assert_int_equal(n_fakes, 2);
        assert_true(fakes[1].user_code);
        assert_string_equal(fakes[1].python, PY3);
        fake_end_with(1, "out", 0, "");
        _cleanup_(json_decrefp) json_t *r = reply_result(1, false);
        assert_string_equal(json_string_value(json_object_get(json_object_get(r, "structuredContent"), "stdout")), "out");
}

static void test_execute_python(void **state) {
        probe(PROBE_OK);
        submit("execute_python", "{\"script\":\"print(1)\"}", &owner_a);
        /* The metadata helper, on the tools interpreter, with the script and the interpreter's identity. */
        assert_int_equal(n_fakes, 2);
        assert_false(fakes[1].user_code);
        assert_string_equal(fakes[1].python, PY3);
        _cleanup_(json_decrefp) json_t *in = json_loads(fakes[1].stdin_data, 0, NULL);
        assert_non_null(in);
        assert_string_equal(json_string_value(json_object_get(in, "script")), "print(1)");
        assert_string_equal(json_string_value(json_object_get(json_object_get(in, "python"), "version")), "3.11.2");
        assert_true(scheduler_has(&sched, &owner_a, "1")); /* being prepared is pyexec's */
        assert_false(scheduler_has(&sched, &owner_b, "1"));

        fake_end_with(1, "{\"problems\":[],\"requirements\":[],\"key\":\"k1\"}", 0, "");
        /* No dependencies: the run, with the interpreter's path; the result says which. */
        assert_int_equal(n_fakes, 3);
        assert_true(fakes[2].user_code);
        assert_string_equal(fakes[2].python, PY3);
        assert_int_equal(n_replies, 0);
        fake_end_with(2, "1\n", 0, "");
        _cleanup_(json_decrefp) json_t *r = reply_result(0, false);
        json_t *sc = json_object_get(r, "structuredContent");
        assert_string_equal(json_string_value(json_object_get(sc, "python")), "python3");
        assert_string_equal(json_string_value(json_object_get(sc, "python_version")), "3.11.2");
        assert_int_equal(json_array_size(json_object_get(sc, "dependencies")), 0);
        assert_true(json_is_null(json_object_get(sc, "environment")));
        assert_string_equal(json_string_value(json_object_get(sc, "stdout")), "1\n");
}

static void test_execute_python_refused(void **state) {
        probe(PROBE_OK);
        /* Invalid metadata: each problem with its line and text. */
        submit("execute_python", "{\"script\":\"x\"}", &owner_a);
        fake_end_with(1, "{\"problems\":[{\"line\":2,\"check\":\"toml\",\"message\":\"bad value\",\"text\":\"x = \"}],"
                    "\"requirements\":[]}", 0, "");
        expect_tool_error(0, "the script's PEP 723 metadata or dependencies are invalid:\nline 2: bad value\n    x = ");
        /* Dependencies with no source configured: the operator's variables are named. */
        submit("execute_python", "{\"script\":\"x\"}", &owner_a);
        fake_end_with(2, "{\"problems\":[],\"requirements\":[\"numpy\"],\"key\":\"k\"}", 0, "");
        expect_tool_error(1, "needs dependencies [\"numpy\"], but no dependency source is configured");
        expect_tool_error(1, "MCP_EXEC_INDEX_URL");
        /* A helper that fails: its exit code and stderr's tail. */
        submit("execute_python", "{\"script\":\"x\"}", &owner_a);
        fake_end_with(3, "", 2, "Traceback: tomllib missing");
        expect_tool_error(2, "the PEP 723 metadata parser failed (exit code 2): Traceback: tomllib missing");
        assert_int_equal(n_fakes, 4); /* nothing ran */
}

static void test_metadata_tools_missing(void **state) {
        probe("{\"version\":\"3.9.2\",\"implementation\":\"cpython\",\"packages\":[],\"metadata_tools\":false}");
        submit("validate_script", "{\"script\":\"x\"}", &owner_a);
        expect_tool_error(0, "cannot parse PEP 723 metadata: it needs python3 >= 3.11");
        assert_int_equal(n_fakes, 1);
}

static void test_validate_script(void **state) {
        probe(PROBE_OK);
        submit("validate_script", "{\"script\":\"def\"}", &owner_a);
        fake_end_with(1, "{\"problems\":[],\"requirements\":[],\"requires_python\":\">=3.8\"}", 0, "");
        /* Then the syntax check, on the chosen interpreter, given the script. */
        assert_int_equal(n_fakes, 3);
        assert_string_equal(fakes[2].python, PY3);
        assert_string_equal(fakes[2].stdin_data, "def");
        fake_end_with(2, "{\"ok\":false,\"line\":1,\"message\":\"invalid syntax\",\"text\":\"def\"}", 0, "");
        _cleanup_(json_decrefp) json_t *r = reply_result(0, false);
        json_t *sc = json_object_get(r, "structuredContent");
        assert_true(json_is_false(json_object_get(sc, "valid")));
        assert_string_equal(json_string_value(json_object_get(sc, "requires_python")), ">=3.8");
        json_t *p = json_array_get(json_object_get(sc, "problems"), 0);
        assert_string_equal(json_string_value(json_object_get(p, "check")), "syntax");
        assert_int_equal(json_integer_value(json_object_get(p, "line")), 1);
        assert_int_equal(n_fakes, 3); /* validate_script runs nothing of the caller's */
}

static void test_check_environment(void **state) {
        probe(PROBE_OK);
        pyexec_set_py_sessions(px, sessions_count, NULL);
        submit("check_environment", "{}", &owner_a);
        assert_int_equal(n_fakes, 1); /* answered from what the probe found, no run */
        _cleanup_(json_decrefp) json_t *r = reply_result(0, false);
        json_t *sc = json_object_get(r, "structuredContent");
        assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "daemon"), "version")), "1.2.3");
        json_t *interps = json_object_get(sc, "interpreters");
        assert_int_equal(json_array_size(interps), 2);
        json_t *py3 = json_array_get(interps, 0), *pypy = json_array_get(interps, 1);
        assert_true(json_is_true(json_object_get(py3, "default")));
        assert_string_equal(json_string_value(json_object_get(py3, "version")), "3.11.2");
        assert_int_equal(json_array_size(json_object_get(py3, "packages")), 2);
        assert_string_equal(json_string_value(json_object_get(pypy, "name")), "pypy3");
        assert_non_null(strstr(json_string_value(json_object_get(pypy, "error")), "was not found"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(sc, "cgroup"), "limits_by")), "rlimit");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(sc, "python_sessions"), "max")), 3);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(sc, "sandbox"), "python_sessions_open")), 2);
        assert_false(json_is_true(json_object_get(json_object_get(sc, "sources"), "configured")));
}

/* ---- session_open's preparation ------------------------------------------------------------- */

static int n_opened;
static char opened_python[64];

static void on_session_open(void *userdata, McpCall *call, void *owner, JobReplyFn reply, const JobPrep *prep) {
        n_opened++;
        snprintf(opened_python, sizeof(opened_python), "%s", prep->python ?: "");
        assert_null(prep->env_dir); /* no dependencies */
        assert_string_equal(json_string_value(json_object_get(prep->extra, "python")), "python3");
        assert_int_equal(mcp_call_args(call)->tool, MCP_TOOL_SESSION_OPEN);
        reply(owner, mcp_call_reply_tool_error(call, "opened"));
        mcp_call_free(call);
}

static void test_session_prepare(void **state) {
        probe(PROBE_OK);
        /* Without the sessions joined, a prepared open has nowhere to go. */
        assert_int_equal(pyexec_session_prepare(px, call_of("session_open", "{\"python\":\"python3\"}"), &owner_a,
                                                on_reply), 0);
        assert_int_equal(ring_run_once(ring, 1000000), 0);
        expect_tool_error(0, "Python sessions are not served by this server");

        n_opened = 0;
        pyexec_set_session_open(px, on_session_open, NULL);
        assert_int_equal(pyexec_session_prepare(px, call_of("session_open", "{\"python\":\"python3\"}"), &owner_a,
                                                on_reply), 0);
        assert_int_equal(n_opened, 0); /* from the loop, never from inside */
        assert_int_equal(ring_run_once(ring, 1000000), 0);
        assert_int_equal(n_opened, 1);
        assert_string_equal(opened_python, PY3);
        expect_tool_error(1, "opened");
        assert_int_equal(n_fakes, 1); /* no dependencies: no helper, and no run of ours */
}

/* ---- cancellation and shutdown -------------------------------------------------------------- */

static void test_cancel_mid_helper(void **state) {
        probe(PROBE_OK);
        submit("execute_python", "{\"script\":\"x\"}", &owner_a);
        submit("execute_python", "{\"script\":\"y\"}", &owner_b);
        assert_int_equal(n_fakes, 3);
        /* Another owner's id is not ours to cancel. */
        assert_false(scheduler_cancel(&sched, &owner_b, "1"));
        assert_true(scheduler_cancel(&sched, &owner_a, "1"));
        assert_true(fakes[1].killed);
        assert_false(fakes[2].killed);
        assert_false(scheduler_has(&sched, &owner_a, "1"));
        assert_true(pyexec_busy(px)); /* until its helper is over */
        fake_end_with(1, "", -9, "");
        /* Cancelling every call of an owner (its connection went). */
        scheduler_cancel_owner(&sched, &owner_b);
        assert_true(fakes[2].killed);
        fake_end_with(2, "", -9, "");
        assert_int_equal(n_fakes, 3); /* nothing ran */
        assert_int_equal(n_replies, 0); /* and nothing was answered */
}

static void test_cancel_before_first_step(void **state) {
        probe(PROBE_OK);
        assert_int_equal(scheduler_submit(&sched, call_of("execute_python", "{\"script\":\"x\"}"), &owner_a, on_reply),
                         0);
        assert_true(scheduler_cancel(&sched, &owner_a, "1"));
        assert_true(pyexec_busy(px)); /* its turn of the loop is still to come */
        assert_int_equal(ring_run_once(ring, 1000000), 0);
        assert_int_equal(n_fakes, 1);
        assert_int_equal(n_replies, 0);
}

static void test_shutdown(void **state) {
        probe(PROBE_OK);
        submit("execute_python", "{\"script\":\"x\"}", &owner_a);
        scheduler_shutdown(&sched, "stopping for the test");
        expect_tool_error(0, "stopping for the test");
        assert_true(fakes[1].killed);
        fake_end_with(1, "{\"problems\":[],\"requirements\":[]}", 0, "");
        assert_int_equal(n_fakes, 2); /* the helper's answer starts nothing */
        assert_int_equal(n_replies, 1);
}

static void test_probe_stop(void **state) {
        assert_int_equal(pyexec_probe_start(px, on_probed, NULL), 0);
        pyexec_probe_stop(px);
        assert_true(fakes[0].killed);
        fake_end_with(0, "", -9, "");
        /* done still comes, with no error: the probes were stopped, they did not fail. */
        assert_int_equal(probed_calls, 1);
        assert_int_equal(probed_r, 0);
}

/* Two entries on one path are probed once; the second learns from the first. */
static void test_probe_shared_path(void **state) {
        teardown(state);
        env_pythons = "python3=" PY3 ",again=" PY3;
        setup(state);
        probe(PROBE_OK);
        submit("check_environment", "{}", &owner_a);
        _cleanup_(json_decrefp) json_t *r = reply_result(0, false);
        json_t *interps = json_object_get(json_object_get(r, "structuredContent"), "interpreters");
        assert_string_equal(json_string_value(json_object_get(json_array_get(interps, 1), "name")), "again");
        assert_string_equal(json_string_value(json_object_get(json_array_get(interps, 1), "version")), "3.11.2");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                fixture_test(test_probe),
                fixture_test(test_probe_failed),
                fixture_test(test_probe_stop),
                fixture_test(test_probe_shared_path),
                fixture_test(test_exec_naming_interpreter),
                fixture_test(test_execute_python),
                fixture_test(test_execute_python_refused),
                fixture_test(test_metadata_tools_missing),
                fixture_test(test_validate_script),
                fixture_test(test_check_environment),
                fixture_test(test_session_prepare),
                fixture_test(test_cancel_mid_helper),
                fixture_test(test_cancel_before_first_step),
                fixture_test(test_shutdown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
