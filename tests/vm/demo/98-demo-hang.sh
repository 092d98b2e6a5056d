#!/bin/bash
# Demonstration only (MCP_EXECD_VM_DEMO_HANG=1): a test that never ends; its deadline cuts it off.
# tier-timeout: 15
echo "hanging on purpose"
sleep infinity
