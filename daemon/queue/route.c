/* route.c: the route table: tool and variant to the room that serves it. */
#include <errno.h>

#include "route.h"

RouteVariant route_variant_of(const McpExecArgs *a) {
        return a->session ? ROUTE_VARIANT_SESSION : a->python ? ROUTE_VARIANT_PYTHON : ROUTE_VARIANT_PLAIN;
}

int route_table_add(RouteTable *t, const RouteVTable *vtable, void *userdata) {
        if (t->n_rooms >= ROUTE_ROOMS_MAX)
                return -E2BIG;
        /* All or nothing: checked before anything is written, so a refused room leaves no route. */
        for (size_t tool = 0; tool < _MCP_TOOL_MAX; tool++)
                for (size_t v = 0; v < _ROUTE_VARIANT_MAX; v++)
                        if ((vtable->serves[tool] & (1u << v)) && t->room_of[tool][v])
                                return -EEXIST;
        t->rooms[t->n_rooms++] = (RouteRoom) { .vtable = vtable, .userdata = userdata };
        for (size_t tool = 0; tool < _MCP_TOOL_MAX; tool++)
                for (size_t v = 0; v < _ROUTE_VARIANT_MAX; v++)
                        if (vtable->serves[tool] & (1u << v))
                                t->room_of[tool][v] = (uint8_t) t->n_rooms;
        return 0;
}

const RouteRoom *route_table_get(const RouteTable *t, McpTool tool, RouteVariant variant) {
        if ((unsigned) tool >= _MCP_TOOL_MAX || (unsigned) variant >= _ROUTE_VARIANT_MAX)
                return NULL;
        uint8_t i = t->room_of[tool][variant];
        return i ? &t->rooms[i - 1] : NULL;
}

const RouteRoom *route_table_lookup(const RouteTable *t, const McpExecArgs *a) {
        return route_table_get(t, a->tool, route_variant_of(a));
}

bool route_table_has(const RouteTable *t, const void *owner, const char *id_key) {
        for (size_t i = 0; i < t->n_rooms; i++) {
                const RouteRoom *r = &t->rooms[i];
                if (r->vtable->has && r->vtable->has(r->userdata, owner, id_key))
                        return true;
        }
        return false;
}

bool route_table_cancel(const RouteTable *t, const void *owner, const char *id_key) {
        bool any = false;
        for (size_t i = 0; i < t->n_rooms; i++) {
                const RouteRoom *r = &t->rooms[i];
                if (r->vtable->cancel && r->vtable->cancel(r->userdata, owner, id_key))
                        any = true;
        }
        return any;
}

void route_table_shutdown(const RouteTable *t, const char *reason) {
        for (size_t i = 0; i < t->n_rooms; i++) {
                const RouteRoom *r = &t->rooms[i];
                if (r->vtable->shutdown)
                        r->vtable->shutdown(r->userdata, reason);
        }
}

void route_table_gauges(const RouteTable *t, Metrics *metrics) {
        for (size_t i = 0; i < t->n_rooms; i++) {
                const RouteRoom *r = &t->rooms[i];
                if (r->vtable->gauges)
                        r->vtable->gauges(r->userdata, metrics);
        }
}
