// SPDX-License-Identifier: GPL-2.0
// --working-set's toucher: a thread of the workload that writes the walked
// mapping's pages in the sequence of working_set.hpp, per_round pages per
// --interval spread evenly over it, and publishes its position after each
// touch, until the stop.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ptwalk/scenario.hpp"
#include "ptwalk/shared.hpp"

namespace ptwalk {

void touch_loop(const Scenario *sc, Shared *sh, uint8_t *base, size_t len);

} // namespace ptwalk
