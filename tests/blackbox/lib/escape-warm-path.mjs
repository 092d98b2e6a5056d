// Imported first by escape-warm.test.mjs: the escape suite's attempts are served by ready sandboxes.
process.env.BLACKBOX_ESCAPE_PATH = 'warm';
