/* test-route.c: the route table as the daemon builds it (the run queue's row from scheduler_init(),
 * then the vtables of pysession/ and python/) walked against tools/list: every listed tool, in every
 * variant its input schema allows, has exactly one room, and every route a room declares is a
 * listed tool's. Then the table itself: the order of the rooms changes no route, a claim twice is
 * refused whole, and the calls that are routed today go where they went before the table. */
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
#include "pysession.h"
#include "route.h"
#include "scheduler.h"
#include "unit-fakes.h"

static McpServer *server;
static Scheduler sched;
static int next_id;

/* The rooms the daemon adds (daemon.c's daemon_routes_setup()), in its order. */
static const RouteVTable *const daemon_rooms[] = { &pysessions_route_vtable, &pyexec_route_vtable };

static int setup(void **state) {
        server = fake_server_new(&fake_limits);

        /* No call is submitted: the rooms' objects are never reached, NULL will do. */
        scheduler_init(&sched, &(RunEnv) {}, 1, 1);
        for (size_t i = 0; i < ELEMENTSOF(daemon_rooms); i++)
                assert_int_equal(scheduler_route(&sched, daemon_rooms[i], NULL), 0);
        return 0;
}

static int teardown(void **state) {
        scheduler_done(&sched);
        server = mcp_server_free(server);
        return 0;
}

static json_t *tools_list(void) {
        const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
        McpAction a;
        assert_int_equal(mcp_server_handle(server, msg, strlen(msg), &a), 0);
        assert_int_equal(a.kind, MCP_ACTION_REPLY);
        json_t *reply = json_loads(a.reply, 0, NULL);
        mcp_action_done(&a);
        assert_non_null(reply);
        json_t *tools = json_incref(json_object_get(json_object_get(reply, "result"), "tools"));
        json_decref(reply);
        assert_true(json_array_size(tools) > 0);
        return tools;
}

/* A tools/call of tool whose arguments are its schema's required ones (a value of each one's type)
 * plus `python` or `session` as variant asks; NULL when the server did not take it as a call. */
static McpCall *call_of_variant(const char *name, json_t *schema, RouteVariant variant) {
        _cleanup_(json_decrefp) json_t *args = json_object();
        size_t i;
        json_t *req;
        json_array_foreach(json_object_get(schema, "required"), i, req) {
                const char *prop = json_string_value(req);
                const char *type = json_string_value(
                        json_object_get(json_object_get(json_object_get(schema, "properties"), prop), "type"));
                json_t *v = !type                          ? json_string("x")
                            : strcmp(type, "integer") == 0 ? json_integer(1)
                            : strcmp(type, "array") == 0   ? json_array()
                            : strcmp(type, "object") == 0  ? json_object()
                                                           : json_string("x");
                assert_int_equal(json_object_set_new(args, prop, v), 0);
        }
        if (variant == ROUTE_VARIANT_PYTHON)
                assert_int_equal(json_object_set_new(args, "python", json_string("pypy3")), 0);
        if (variant == ROUTE_VARIANT_SESSION)
                assert_int_equal(json_object_set_new(args, "session", json_string("s-1")), 0);
        _cleanup_(json_decrefp) json_t *msg = json_pack("{s:s, s:i, s:s, s:{s:s, s:O}}", "jsonrpc", "2.0", "id",
                                                        ++next_id, "method", "tools/call", "params", "name", name,
                                                        "arguments", args);
        _cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
        assert_non_null(text);
        McpAction a;
        assert_int_equal(mcp_server_handle(server, text, strlen(text), &a), 0);
        if (a.kind != MCP_ACTION_CALL) {
                print_error("%s: not taken as a call: %s\n", text, a.reply ? a.reply : "(no reply)");
                mcp_action_done(&a);
                return NULL;
        }
        McpCall *c = TAKE_PTR(a.call);
        mcp_action_done(&a);
        return c;
}

/* The rooms of t that claim tool in variant. */
static unsigned claims(const RouteTable *t, McpTool tool, RouteVariant variant) {
        unsigned n = 0;
        for (size_t i = 0; i < t->n_rooms; i++)
                n += !!(t->rooms[i].vtable->serves[tool] & (1u << variant));
        return n;
}

static const char *const variant_names[_ROUTE_VARIANT_MAX] = {
        [ROUTE_VARIANT_PLAIN] = "plain",
        [ROUTE_VARIANT_PYTHON] = "python",
        [ROUTE_VARIANT_SESSION] = "session",
};

static void test_table_against_tools_list(void **state) {
        _cleanup_(json_decrefp) json_t *tools = tools_list();
        bool listed[_MCP_TOOL_MAX][_ROUTE_VARIANT_MAX] = {};
        const char *name_of[_MCP_TOOL_MAX] = {};
        unsigned failures = 0;

        size_t i;
        json_t *tool;
        json_array_foreach(tools, i, tool) {
                const char *name = json_string_value(json_object_get(tool, "name"));
                json_t *schema = json_object_get(tool, "inputSchema");
                json_t *props = json_object_get(schema, "properties");
                assert_non_null(name);
                assert_non_null(props);
                bool session_required = false;
                size_t k;
                json_t *req;
                json_array_foreach(json_object_get(schema, "required"), k, req)
                        session_required |= strcmp(json_string_value(req), "session") == 0;
                /* The variants a client can send: what the schema accepts. */
                bool allowed[_ROUTE_VARIANT_MAX] = {
                        [ROUTE_VARIANT_PLAIN] = !session_required,
                        [ROUTE_VARIANT_PYTHON] = !session_required && json_object_get(props, "python"),
                        [ROUTE_VARIANT_SESSION] = json_object_get(props, "session") != NULL,
                };
                for (RouteVariant v = 0; v < _ROUTE_VARIANT_MAX; v++) {
                        if (!allowed[v])
                                continue;
                        McpCall *c = call_of_variant(name, schema, v);
                        assert_non_null(c);
                        const McpExecArgs *a = mcp_call_args(c);
                        assert_int_equal(route_variant_of(a), v);
                        /* One McpTool per listed name, and one name per McpTool. */
                        assert_true(!name_of[a->tool] || strcmp(name_of[a->tool], name) == 0);
                        name_of[a->tool] = name;
                        listed[a->tool][v] = true;

                        unsigned n = claims(&sched.routes, a->tool, v);
                        const RouteRoom *room = route_table_lookup(&sched.routes, a);
                        if (n != 1 || !room) {
                                print_error("tool %s (%s): %u rooms claim it\n", name, variant_names[v], n);
                                failures++;
                        } else
                                assert_true(room->vtable->serves[a->tool] & (1u << v));
                        mcp_call_free(c);
                }
        }

        /* Every route a room declares is a listed tool's, in a variant its schema allows; and every
         * room serves something. */
        for (size_t r = 0; r < sched.routes.n_rooms; r++) {
                const RouteVTable *vt = sched.routes.rooms[r].vtable;
                bool any = false;
                for (McpTool t = 0; t < _MCP_TOOL_MAX; t++)
                        for (RouteVariant v = 0; v < _ROUTE_VARIANT_MAX; v++) {
                                if (!(vt->serves[t] & (1u << v)))
                                        continue;
                                any = true;
                                if (!listed[t][v]) {
                                        print_error("room %s serves tool %d (%s) in variant %s, which tools/list "
                                                    "does not offer\n",
                                                    vt->name, (int) t, name_of[t] ? name_of[t] : "not listed",
                                                    variant_names[v]);
                                        failures++;
                                }
                        }
                if (!any) {
                        print_error("room %s serves nothing\n", vt->name);
                        failures++;
                }
        }
        assert_int_equal(failures, 0);
}

/* Today's routes, which the hook chain gave before the table (issue 28.2): exec with the default
 * interpreter straight to the run queue, naming an interpreter through pyexec, naming a session
 * to the sessions, whatever else it names; session_open the sessions' even with an interpreter. */
static void test_routes_as_before(void **state) {
        static const struct {
                McpTool tool;
                RouteVariant variant;
                const RouteVTable *room; /* NULL: the run queue, the scheduler's own */
        } want[] = {
                { MCP_TOOL_EXEC, ROUTE_VARIANT_PLAIN, NULL },
                { MCP_TOOL_EXEC, ROUTE_VARIANT_PYTHON, &pyexec_route_vtable },
                { MCP_TOOL_EXEC, ROUTE_VARIANT_SESSION, &pysessions_route_vtable },
                { MCP_TOOL_EXECUTE_PYTHON, ROUTE_VARIANT_PLAIN, &pyexec_route_vtable },
                { MCP_TOOL_EXECUTE_PYTHON, ROUTE_VARIANT_PYTHON, &pyexec_route_vtable },
                { MCP_TOOL_EXECUTE_PYTHON, ROUTE_VARIANT_SESSION, &pysessions_route_vtable },
                { MCP_TOOL_VALIDATE_SCRIPT, ROUTE_VARIANT_PLAIN, &pyexec_route_vtable },
                { MCP_TOOL_CHECK_ENVIRONMENT, ROUTE_VARIANT_PLAIN, &pyexec_route_vtable },
                { MCP_TOOL_SESSION_OPEN, ROUTE_VARIANT_PLAIN, &pysessions_route_vtable },
                { MCP_TOOL_SESSION_OPEN, ROUTE_VARIANT_PYTHON, &pysessions_route_vtable },
                { MCP_TOOL_SESSION_CLOSE, ROUTE_VARIANT_SESSION, &pysessions_route_vtable },
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const RouteRoom *room = route_table_get(&sched.routes, want[i].tool, want[i].variant);
                assert_non_null(room);
                if (want[i].room)
                        assert_ptr_equal(room->vtable, want[i].room);
                else
                        assert_ptr_equal(room->userdata, &sched);
        }
        /* A call naming both a session and an interpreter is the session's (it refuses another). */
        McpExecArgs both = { .tool = MCP_TOOL_EXEC, .python = "pypy3", .session = "s-1" };
        assert_int_equal(route_variant_of(&both), ROUTE_VARIANT_SESSION);
}

/* The same rooms in the other order give the same table. */
static void test_order_changes_nothing(void **state) {
        const RouteRoom *queue = &sched.routes.rooms[0];
        RouteTable reverse = {};
        for (size_t i = ELEMENTSOF(daemon_rooms); i > 0; i--)
                assert_int_equal(route_table_add(&reverse, daemon_rooms[i - 1], NULL), 0);
        assert_int_equal(route_table_add(&reverse, queue->vtable, queue->userdata), 0);
        for (McpTool t = 0; t < _MCP_TOOL_MAX; t++)
                for (RouteVariant v = 0; v < _ROUTE_VARIANT_MAX; v++) {
                        const RouteRoom *a = route_table_get(&sched.routes, t, v), *b = route_table_get(&reverse, t, v);
                        assert_ptr_equal(a ? a->vtable : NULL, b ? b->vtable : NULL);
                }
}

static int fake_submit(void *userdata, McpCall *call, void *owner, JobReplyFn reply) {
        return -ENOTSUP;
}

/* A claim of a route another room has is refused whole; a full table refuses more rooms. */
static void test_add_refused(void **state) {
        RouteTable t = {};
        static const RouteVTable first = { .name = "first", .serves = { [MCP_TOOL_EXEC] = ROUTE_PLAIN },
                                           .submit = fake_submit };
        static const RouteVTable overlap = {
                .name = "overlap",
                .serves = { [MCP_TOOL_CHECK_ENVIRONMENT] = ROUTE_PLAIN, [MCP_TOOL_EXEC] = ROUTE_PLAIN | ROUTE_PYTHON },
                .submit = fake_submit,
        };
        static const RouteVTable empty = { .name = "empty", .submit = fake_submit };
        assert_int_equal(route_table_add(&t, &first, NULL), 0);
        assert_int_equal(route_table_add(&t, &overlap, NULL), -EEXIST);
        assert_int_equal(t.n_rooms, 1);
        assert_null(route_table_get(&t, MCP_TOOL_CHECK_ENVIRONMENT, ROUTE_VARIANT_PLAIN));
        assert_null(route_table_get(&t, MCP_TOOL_EXEC, ROUTE_VARIANT_PYTHON));
        assert_ptr_equal(route_table_get(&t, MCP_TOOL_EXEC, ROUTE_VARIANT_PLAIN)->vtable, &first);
        assert_null(route_table_get(&t, _MCP_TOOL_MAX, ROUTE_VARIANT_PLAIN));

        while (t.n_rooms < ROUTE_ROOMS_MAX)
                assert_int_equal(route_table_add(&t, &empty, NULL), 0);
        assert_int_equal(route_table_add(&t, &empty, NULL), -E2BIG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_table_against_tools_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_routes_as_before, setup, teardown),
                cmocka_unit_test_setup_teardown(test_order_changes_nothing, setup, teardown),
                cmocka_unit_test(test_add_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
