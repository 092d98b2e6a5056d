#!/bin/bash
# The bed itself: the D-Bus system bus answers, and systemd is on it.
set -e
id=$(busctl --system call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus GetId)
echo "bus id: $id"
ver=$(busctl --system get-property org.freedesktop.systemd1 /org/freedesktop/systemd1 \
	org.freedesktop.systemd1.Manager Version)
echo "systemd1.Manager.Version: $ver"
[ -n "$ver" ]
