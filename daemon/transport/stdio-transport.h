/* stdio-transport.h: the stdio transport: newline-delimited JSON-RPC on fd 0 and fd 1, driven by the ring. */
#pragma once

#include <stdbool.h>

#include "dispatch.h"
#include "mcp.h"
#include "ring.h"
#include "scheduler.h"

typedef struct Stdio Stdio;

/* Starts reading fd 0. mcp is the session's protocol state (owned by the caller). */
int stdio_start(Ring *ring, Scheduler *scheduler, McpServer *mcp, size_t max_message_bytes, Stdio **ret);
/* The unit tests' seam: the same on in_fd and out_fd (borrowed) instead of fd 0 and fd 1. */
int stdio_start_fds(Ring *ring, Scheduler *scheduler, McpServer *mcp, size_t max_message_bytes, int in_fd,
                    int out_fd, Stdio **ret);

/* The session (mcp) no longer holds messages (mcp_server_release()): the one the transport kept is
 * handled, then those read after it, and reading goes on. */
void stdio_release(Stdio *t);

/* The session refuses what it held (mcp_server_refuse()): the message the transport kept, and
 * those read after it, are handed in and answered; reading does not go on from here. */
void stdio_refuse_held(Stdio *t);

/* Stops reading (shutdown). Input not read yet gets no answer; call stdio_refuse_held() for a
 * message held by a session that will never be released. */
void stdio_stop_reading(Stdio *t);
/* Whether stdin has brought anything yet (bytes, or its end). */
bool stdio_got_input(const Stdio *t);

/* Tasks (dispatch.h): the client of stdio, the one this process serves, creates and sees them. */
void stdio_set_tasks(Stdio *t, DispatchTasks *tasks);

/* True once the transport has nothing more to do: input ended (EOF, stop, or the client went
 * away), every call answered and every reply written, or the output failed. */
bool stdio_finished(const Stdio *t);

/* True if writing to fd 1 failed: the client is gone. */
bool stdio_client_gone(const Stdio *t);

/* Frees the transport once its kernel operations have completed (call when stdio_finished()). */
/* Teardown, by ownership: stdio_cancel_io() asks the kernel to cancel the transport's reads and
 * writes; the owner turns the loop until !stdio_io_busy() (cancelling again on each turn: io_uring
 * cannot always cancel a blocking read of a pipe or tty at once), then calls stdio_free(). */
void stdio_cancel_io(Stdio *t);
bool stdio_io_busy(const Stdio *t);

/* Frees the transport; if its kernel operations are still in flight (the owner gave up waiting),
 * it is left allocated rather than let the kernel complete into freed memory: we exit next. */
void stdio_free(Stdio *t);
