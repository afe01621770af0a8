// SPDX-License-Identifier: GPL-2.0
// The command line of ptwalk's own commands: "--key value" / "--key=value"
// arguments, and options declared once in a table (name, value, help with
// its default, parser) from which the parser and the usage text are made.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace ptwalk::cli {

[[noreturn]] inline void usage_error(const std::string &cmd, const std::string &msg)
{
	fprintf(stderr, "ptwalk %s: %s (see 'ptwalk help')\n", cmd.c_str(), msg.c_str());
	exit(2);
}

// An option's value as a whole number lo..hi, or a usage error naming it.
inline uint64_t count_arg(const std::string &cmd, const std::string &k, const std::string &v,
			  unsigned long long lo, unsigned long long hi)
{
	char *end = nullptr;
	errno = 0;
	const unsigned long long n = strtoull(v.c_str(), &end, 10);
	if (v.empty() || v[0] == '-' || *end || errno || n < lo || n > hi)
		usage_error(cmd, k + " '" + v + "': want " + std::to_string(lo) + ".." +
					 std::to_string(hi));
	return n;
}

// Splits "--key=value" / "--key value"; flags take no value.
struct Args {
	std::string cmd;
	std::vector<std::string> argv;
	size_t i = 0;

	bool next(std::string *key, std::string *value, const std::vector<std::string> &flags)
	{
		if (i >= argv.size())
			return false;
		std::string a = argv[i++];
		if (a.rfind("--", 0) != 0)
			usage_error(cmd, "unexpected argument '" + a + "'");
		size_t eq = a.find('=');
		if (eq != std::string::npos) {
			*key = a.substr(0, eq);
			*value = a.substr(eq + 1);
			return true;
		}
		*key = a;
		for (auto &f : flags)
			if (f == a) {
				value->clear();
				return true;
			}
		if (i >= argv.size() || argv[i].rfind("--", 0) == 0)
			usage_error(cmd, a + " needs a value");
		*value = argv[i++];
		return true;
	}
};

// One option of a command, declared once: its name, its value's name ("" for
// a flag), its help (lines split by '\n'; {default} is the default, taken
// from the options' own defaults, {choices} the values it takes, wrapped
// after '|' to fit), and how its value goes into the options.
template <typename O>
struct Option {
	const char *name;
	const char *value;
	const char *help;
	std::function<std::string()> shown_default;
	std::function<std::string()> choices;
	std::function<void(O &o, const Args &a, const std::string &k, const std::string &v)> set;
};

constexpr size_t kHelpColumn = 23; // "  " and the option, padded
constexpr size_t kUsageWidth = 80;

inline std::string replace_all(std::string s, const std::string &from, const std::string &to)
{
	for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
		s.replace(p, from.size(), to);
	return s;
}

// The help lines of one option; the line holding {choices} is wrapped after
// its '|'s to fit the width.
template <typename O>
std::vector<std::string> help_lines(const Option<O> &opt)
{
	std::string help = opt.help;
	if (opt.shown_default)
		help = replace_all(help, "{default}", opt.shown_default());
	std::vector<std::string> out;
	size_t pos = 0;
	while (pos <= help.size()) {
		size_t nl = help.find('\n', pos);
		std::string line = help.substr(pos, nl == std::string::npos ? nl : nl - pos);
		if (size_t c = line.find("{choices}"); c != std::string::npos && opt.choices) {
			const std::string ch = opt.choices();
			std::vector<std::string> pieces;
			size_t from = 0;
			for (size_t bar = ch.find('|'); bar != std::string::npos;
			     bar = ch.find('|', from)) {
				pieces.push_back(ch.substr(from, bar + 1 - from));
				from = bar + 1;
			}
			pieces.push_back(ch.substr(from));
			pieces.front() = line.substr(0, c) + pieces.front();
			pieces.back() += line.substr(c + 9);
			std::string cur;
			for (const auto &p : pieces) {
				if (!cur.empty() &&
				    kHelpColumn + cur.size() + p.size() > kUsageWidth) {
					out.push_back(cur);
					cur.clear();
				}
				cur += p;
			}
			out.push_back(cur);
		} else {
			out.push_back(line);
		}
		if (nl == std::string::npos)
			break;
		pos = nl + 1;
	}
	return out;
}

// The same options as Markdown for a man page's OPTIONS section
// (docs/man/*.md, turned into roff by go-md2man in scripts/gen-man.py): a
// definition list, each help text on one line with its default and choices
// filled in, Markdown's special characters escaped.
inline std::string md_escape(const std::string &s)
{
	std::string out;
	for (char c : s) {
		if (strchr("\\`*_{}[]<>|#", c))
			out += '\\';
		out += c;
	}
	return out;
}

template <typename O>
std::string option_markdown(const std::vector<Option<O>> &table)
{
	std::string out;
	for (const auto &opt : table) {
		out += "**" + md_escape(opt.name) + "**";
		if (*opt.value)
			out += " *" + md_escape(opt.value) + "*";
		std::string text;
		// the usage's lines joined again ("memory-" "mapped": no space)
		for (const auto &l : help_lines(opt))
			text += (text.empty() || text.back() == '-' ? "" : " ") + l;
		// choices as "a | b | c": a line of them is too long to fill
		text = replace_all(replace_all(text, "| ", "|"), "|", " | ");
		out += "\n: " + md_escape(text) + "\n\n";
	}
	return out;
}

// Bash completion from the same table: the options' names, and one `case`
// arm per option with a value for the word after it: its choices, files
// for a FILE or DIR value, nothing for a value the user types.
template <typename O>
std::string completion_names(const std::vector<Option<O>> &table)
{
	std::string out;
	for (const auto &opt : table)
		out += std::string(opt.name) + " ";
	return out + "--help";
}

template <typename O>
std::string completion_values(const std::vector<Option<O>> &table)
{
	std::string out;
	for (const auto &opt : table) {
		if (!*opt.value)
			continue;
		const std::string v = opt.value;
		const std::string words = opt.choices ? replace_all(opt.choices(), "|", " ") : "";
		out += std::string("\t\t") + opt.name + ") ";
		// the choices are identifiers of the code's own tables: nothing to quote
		if (!words.empty() && words.find('\'') == std::string::npos)
			out += "COMPREPLY=($(compgen -W '" + words + "' -- \"$cur\")) ;;\n";
		else if (v.find("FILE") != std::string::npos || v == "DIR")
			out += "COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n";
		else
			out += "COMPREPLY=() ;;\n";
	}
	return out;
}

// `ptwalk completion`: a bash completion script from the option tables of
// run and monitor (and the command list)
template <typename R, typename M>
std::string bash_completion(const char *commands, const std::vector<Option<R>> &run,
			    const std::vector<Option<M>> &monitor)
{
	std::string s = "# bash completion for ptwalk, written by 'ptwalk completion' from its\n"
			"# option tables\n"
			"_ptwalk() {\n"
			"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
			"\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n"
			"\t\tCOMPREPLY=($(compgen -W '";
	s += commands;
	s += "' -- \"$cur\"))\n"
	     "\t\treturn\n"
	     "\tfi\n"
	     "\tcase ${COMP_WORDS[1]} in\n"
	     "\trun)\n"
	     "\t\tcase $prev in\n" +
	     completion_values(run) + "\t\t*) COMPREPLY=($(compgen -W '" + completion_names(run) +
	     "' -- \"$cur\")) ;;\n"
	     "\t\tesac ;;\n"
	     "\tmonitor)\n"
	     "\t\tcase $prev in\n" +
	     completion_values(monitor) + "\t\t*) COMPREPLY=($(compgen -W '" +
	     completion_names(monitor) +
	     "' -- \"$cur\")) ;;\n"
	     "\t\tesac ;;\n"
	     "\tlocking)\n"
	     "\t\tcase $prev in\n"
	     "\t\t--release) COMPREPLY=() ;;\n"
	     "\t\t*) COMPREPLY=($(compgen -W '--release --json --help' -- \"$cur\")) ;;\n"
	     "\t\tesac ;;\n"
	     "\thelp)\n"
	     "\t\t[ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W '";
	s += commands;
	s += "' -- \"$cur\")) ;;\n"
	     "\tversion|completion)\n"
	     "\t\tCOMPREPLY=($(compgen -W '--help' -- \"$cur\")) ;;\n"
	     "\t*)\n"
	     "\t\tCOMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
	     "\tesac\n"
	     "}\n"
	     "complete -F _ptwalk ptwalk\n";
	return s;
}

template <typename O>
std::string option_usage(const std::vector<Option<O>> &table)
{
	std::string out;
	for (const auto &opt : table) {
		std::string left = "  " + std::string(opt.name);
		if (*opt.value)
			left += std::string(" ") + opt.value;
		left += left.size() < kHelpColumn ? std::string(kHelpColumn - left.size(), ' ')
						  : std::string("  ");
		bool first = true;
		for (const auto &l : help_lines(opt)) {
			out += (first ? left : std::string(kHelpColumn, ' ')) + l + "\n";
			first = false;
		}
	}
	return out;
}

// Reads the command's options into o: each by its table entry, an unknown
// one a usage error.
template <typename O>
void parse_options(Args &a, const std::vector<Option<O>> &table, O &o)
{
	std::vector<std::string> flags;
	for (const auto &opt : table)
		if (!*opt.value)
			flags.push_back(opt.name);
	std::string k, v;
	while (a.next(&k, &v, flags)) {
		const Option<O> *found = nullptr;
		for (const auto &opt : table)
			if (k == opt.name)
				found = &opt;
		if (!found)
			usage_error(a.cmd, "unknown option " + k);
		found->set(o, a, k, v);
	}
}

// --help or -h anywhere among a command's arguments: its usage, exit 0
inline bool wants_help(const Args &a)
{
	return std::any_of(a.argv.begin(), a.argv.end(),
			   [](const std::string &x) { return x == "--help" || x == "-h"; });
}

// "a|b|c" as "a, b or c"
inline std::string or_list(const std::string &bars)
{
	std::string s = replace_all(bars, "|", ", ");
	if (size_t last = s.rfind(", "); last != std::string::npos)
		s.replace(last, 2, " or ");
	return s;
}

// `ptwalk locking` (locking_command.cpp)
int cmd_locking(Args &a);

} // namespace ptwalk::cli
