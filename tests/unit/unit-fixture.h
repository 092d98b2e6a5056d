/* unit-fixture.h: the test list of a file whose tests each run in the file's own fixture, its
 * setup() before the test and its teardown() after. Include after cmocka.h. */
#pragma once

#define fixture_test(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
