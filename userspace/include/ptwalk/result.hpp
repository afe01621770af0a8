// SPDX-License-Identifier: GPL-2.0
// Result assembly: the versioned JSON document (results/SCHEMA.md) and the
// table printed on stdout.
#pragma once

#include <cstdio>
#include <string>

#include "ptwalk/json.hpp"

namespace ptwalk {

constexpr const char *kResultSchema = "ptwalk.result/1";
constexpr const char *kVersion = "0.1.0";

// Adds "walk_summary" (per kind) to a result holding "walks" and "scenario".
void summarize_walks(Json &result);
// Prints the human table of a result (walk kinds, victims out vs during).
void print_table(const Json &result, FILE *out);
// Writes text to path atomically (temporary file in the same directory,
// fsync, rename). Returns "" or a one-line error.
std::string write_atomically(const std::string &path, const std::string &text);

} // namespace ptwalk
