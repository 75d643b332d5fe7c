/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The request budget (sheep --budget, core/request.h) for front/'s own
 * threads, which may not touch it: the charge is made on the loop thread,
 * in the order asked, and waits there while the budget is spent.
 */
#ifndef SHEEP_FRONT_BUDGET_GATE_H
#define SHEEP_FRONT_BUDGET_GATE_H

#include <stdint.h>

/* on the loop thread, once, before the first take */
void budget_gate_init(void);
/* charge @bytes as client traffic; sleeps until the budget allows it */
void budget_gate_take(uint64_t bytes);
/* release @bytes taken before; does not wait */
void budget_gate_put(uint64_t bytes);

#endif
