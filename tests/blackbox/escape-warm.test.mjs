// The escape suite again, each attempt served by a ready sandbox (issue 16.2: a pre-started
// sandbox is exactly as isolated as a cold run). escape.test.mjs has the attempts; this file only
// chooses the path before they are registered (imports run in order).
import './lib/escape-warm-path.mjs';
import './escape.test.mjs';
