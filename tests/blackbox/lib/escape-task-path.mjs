// Imported first by escape-task.test.mjs: the escape suite's attempts run as tasks.
process.env.BLACKBOX_ESCAPE_PATH = 'task';
