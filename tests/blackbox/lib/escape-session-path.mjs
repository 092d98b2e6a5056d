// Imported first by escape-session.test.mjs: the escape suite's attempts run in Python sessions.
process.env.BLACKBOX_ESCAPE_PATH = 'session';
