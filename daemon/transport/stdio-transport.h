/* stdio-transport.h: the stdio transport: newline-delimited JSON-RPC on fd 0 and fd 1, driven by the ring. */
#pragma once

#include <stdbool.h>

#include "mcp.h"
#include "ring.h"
#include "scheduler.h"

typedef struct Stdio Stdio;

/* Starts reading fd 0. mcp is the session's protocol state (owned by the caller). */
int stdio_start(Ring *ring, Scheduler *scheduler, McpServer *mcp, size_t max_message_bytes, Stdio **ret);

/* Stops reading (shutdown). */
void stdio_stop_reading(Stdio *t);

/* True once the transport has nothing more to do: input ended (EOF, stop, or the client went
 * away), every call answered and every reply written, or the output failed. */
bool stdio_finished(const Stdio *t);

/* True if writing to fd 1 failed: the client is gone. */
bool stdio_client_gone(const Stdio *t);

/* Frees the transport once its kernel operations have completed (call when stdio_finished()). */
void stdio_free(Stdio *t);
