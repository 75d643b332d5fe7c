#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The driver-level scenarios of tests/corosync/driver.sh (joins, notifies,
# blocks, deaths of members, joiners and deciders) against the ZooKeeper
# driver, on a private ZooKeeper server.
#
#   bash tests/zookeeper/driver.sh
#
# Ends with "N passed, N failed[, N skipped]".
exec env KELPIE_GROUP_DRIVER=zookeeper bash "$(dirname "$0")/../corosync/driver.sh"
