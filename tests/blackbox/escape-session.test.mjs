// The escape suite again, each attempt run inside a Python session of its own (issue 18.6: a
// session's sandbox is exactly as isolated as a cold run's). escape.test.mjs has the attempts; this
// file only chooses the path before they are registered (imports run in order).
import './lib/escape-session-path.mjs';
import './escape.test.mjs';
