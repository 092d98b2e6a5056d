/* route.h: the route table: which room of the daemon serves each tools/call (issue 28.2), built at
 * start from what every room says it serves, the way systemd's unit_vtable[] gives each unit type
 * its operations. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp.h"
#include "metrics.h"

/* Receives the serialized reply of a call (malloc'd; the callee takes it), or NULL when the call
 * was cancelled and must not be answered. */
typedef void (*JobReplyFn)(void *owner, char *reply);

/* What a call names besides its tool, when that sends it to another room: a call naming a Python
 * session (`session`) is served where the session lives, whatever its tool; one naming an
 * interpreter (`python`) needs the interpreter registry before it can run. A call naming both is
 * the session's: its interpreter was chosen at its open, and the session answers a call that
 * names another. */
typedef enum RouteVariant {
        ROUTE_VARIANT_PLAIN,   /* neither */
        ROUTE_VARIANT_PYTHON,  /* `python`, no `session` */
        ROUTE_VARIANT_SESSION, /* `session` */
        _ROUTE_VARIANT_MAX,
} RouteVariant;

/* RouteVTable.serves: the variants of a tool that a room serves. */
#define ROUTE_PLAIN (1u << ROUTE_VARIANT_PLAIN)
#define ROUTE_PYTHON (1u << ROUTE_VARIANT_PYTHON)
#define ROUTE_SESSION (1u << ROUTE_VARIANT_SESSION)

RouteVariant route_variant_of(const McpExecArgs *a);

/* A room's operations, defined once (const) in the room's own file: the run queue's in scheduler.c,
 * pyexec.c's, pysession/tools.c's. Adding a tool touches the registry (mcp/tools*.c) and the one room
 * that serves it: its serves[] row and its handler. userdata is the room's object, given when the
 * room joins the table. */
typedef struct RouteVTable {
        const char *name; /* in the start's error and the unit test's */
        /* Per tool, the ROUTE_* variants this room serves (0: none). */
        unsigned serves[_MCP_TOOL_MAX];
        /* Takes call and answers it later through reply(owner, …), never from inside; or returns
         * without taking it: -EBUSY (the queue is full, or the scheduler shuts down), -EDQUOT (the
         * call's session has its share of the queue waiting) or -ENOMEM. */
        int (*submit)(void *userdata, McpCall *call, void *owner, JobReplyFn reply);
        /* The calls the room holds before they reach the run queue (being prepared, or a session's):
         * whether owner has one with this id key; drop owner's one with this id key (NULL: all of
         * owner's), never answered, true if one was; answer all of them with a tool error giving
         * reason and take no more. NULL for a room that holds none (the run queue itself). A call
         * is in one room at a time, so the order in which the rooms are asked changes nothing. */
        bool (*has)(void *userdata, const void *owner, const char *id_key);
        bool (*cancel)(void *userdata, const void *owner, const char *id_key);
        void (*shutdown)(void *userdata, const char *reason);
        /* Sets the room's gauges before /metrics is rendered (what it holds now is read at the
         * scrape, not kept up to date). Optional: NULL. */
        void (*gauges)(void *userdata, Metrics *metrics);
} RouteVTable;

/* The run queue, python/ and pysession/, with room to spare. */
#define ROUTE_ROOMS_MAX 4

typedef struct RouteRoom {
        const RouteVTable *vtable;
        void *userdata;
} RouteRoom;

typedef struct RouteTable {
        RouteRoom rooms[ROUTE_ROOMS_MAX]; /* in the order they joined */
        size_t n_rooms;
        /* The room serving each tool and variant, as an index into rooms plus one; 0: none. */
        uint8_t room_of[_MCP_TOOL_MAX][_ROUTE_VARIANT_MAX];
} RouteTable;

/* Adds a room serving what vtable->serves says. Returns 0; -EEXIST when one of those calls is
 * already another room's, -E2BIG when the table has ROUTE_ROOMS_MAX rooms (the table is then
 * unchanged). The order in which rooms join changes no route. */
int route_table_add(RouteTable *t, const RouteVTable *vtable, void *userdata);

/* The room serving a call with these arguments, or NULL when none does. */
const RouteRoom *route_table_lookup(const RouteTable *t, const McpExecArgs *a);
/* The same by tool and variant (the unit test walks the table with it). */
const RouteRoom *route_table_get(const RouteTable *t, McpTool tool, RouteVariant variant);

/* RouteVTable's has, cancel, shutdown and gauges, asked of every room that has them. has: true if a
 * room has the call; cancel: every room drops what it has, true if one did. */
bool route_table_has(const RouteTable *t, const void *owner, const char *id_key);
bool route_table_cancel(const RouteTable *t, const void *owner, const char *id_key);
void route_table_shutdown(const RouteTable *t, const char *reason);
void route_table_gauges(const RouteTable *t, Metrics *metrics);
