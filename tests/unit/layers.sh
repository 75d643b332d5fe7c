#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# sheep's files call one way through the layers of sheep/layers.txt
# (design.md §2); run after make.
cd "$(dirname "$0")/../.." || exit 2
exec python3 tests/unit/layers.py build
