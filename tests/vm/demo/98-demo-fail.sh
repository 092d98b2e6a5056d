#!/bin/bash
# Demonstration only (MCP_EXECD_VM_DEMO_FAIL=1): a test that fails on purpose.
echo "this test fails on purpose, to show that a failing tier test fails the test command"
exit 1
