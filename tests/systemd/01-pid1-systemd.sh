#!/bin/bash
# The bed itself: PID 1 is systemd.
comm=$(cat /proc/1/comm)
exe=$(readlink /proc/1/exe)
echo "PID 1: comm=$comm exe=$exe"
systemctl --version | head -n1
[ "$comm" = systemd ] || { echo "PID 1 is not systemd"; exit 1; }
state=$(systemctl is-system-running 2>&1)
echo "system state: $state"
