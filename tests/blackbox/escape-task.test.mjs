// The escape suite again, each attempt run as a task (issue 17.3: a task's run is exactly as
// isolated as a call's). escape.test.mjs has the attempts; this file only chooses the path before
// they are registered (imports run in order).
import './lib/escape-task-path.mjs';
import './escape.test.mjs';
