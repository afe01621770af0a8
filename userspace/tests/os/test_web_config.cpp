// SPDX-License-Identifier: GPL-2.0
// --web-config: the exporter-toolkit file read, and bcrypt checked. The
// TLS half (certificates, GnuTLS) is tested end to end with Prometheus in
// scripts/tests/test_monitor_web_config.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include "ptwalk/web_config.hpp"

using namespace ptwalk;

namespace {

// crypt_blowfish's test vector: "U*U" at cost 5
const std::string kHash = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";

struct TmpFile {
	std::string path;
	explicit TmpFile(const std::string &text)
	{
		char tmpl[] = "/tmp/ptwalk-web-XXXXXX";
		int fd = mkstemp(tmpl);
		EXPECT_GE(fd, 0);
		close(fd);
		path = tmpl;
		std::ofstream(path) << text;
	}
	~TmpFile() { unlink(path.c_str()); }
};

} // namespace

TEST(WebConfig, BcryptMatchesOnlyItsPassword)
{
	EXPECT_TRUE(bcrypt_matches(kHash, "U*U"));
	EXPECT_FALSE(bcrypt_matches(kHash, "U*V"));
	EXPECT_FALSE(bcrypt_matches(kHash, ""));
	EXPECT_TRUE(bcrypt_matches("$2b$" + kHash.substr(4), "U*U")); // $2b$: the same scheme
	EXPECT_FALSE(bcrypt_matches("$1$abc$def", "U*U"));            // md5-crypt: not accepted
	EXPECT_FALSE(bcrypt_matches(kHash.substr(0, 59), "U*U"));
}

TEST(WebConfig, ReadsUsersAndRefusesWhatItDoesNotServe)
{
	WebConfig c;
	std::string err;
	TmpFile ok("basic_auth_users:\n  prometheus: '" + kHash + "'\n  other: '" + kHash + "'\n");
	ASSERT_TRUE(load_web_config(ok.path, &c, &err)) << err;
	EXPECT_FALSE(c.tls());
	ASSERT_EQ(c.users.size(), 2u);
	EXPECT_EQ(c.users.at("prometheus"), kHash);
	TmpFile empty("");
	EXPECT_TRUE(load_web_config(empty.path, &c, &err)) << err;
	EXPECT_TRUE(c.users.empty());

	const std::pair<std::string, std::string> bad[] = {
		{"basic_auth_users:\n  u: plain\n", "basic_auth_users.u: not a bcrypt hash"},
		{"basic_auth_users:\n  'a:b': '" + kHash + "'\n", "is not a user name"},
		{"basic_auth_users: x\n", "want a mapping"},
		{"tls_server_config:\n  key_file: k\n", "cert_file missing"},
		{"tls_server_config:\n  cert_file: /nonexistent/c\n  key_file: k\n",
		 "cert_file /nonexistent/c: cannot read"},
		{"tls_server_config: 3\n", "want a mapping"},
		{"web: 1\n", "web: not supported"},
		{"- a\n", "want a mapping"},
		{"a: [\n", "not YAML"},
	};
	for (const auto &[text, want] : bad) {
		TmpFile f(text);
		err.clear();
		EXPECT_FALSE(load_web_config(f.path, &c, &err)) << text;
		EXPECT_NE(err.find(want), std::string::npos) << text << " -> " << err;
	}
	EXPECT_FALSE(load_web_config("/nonexistent/web.yml", &c, &err));
	EXPECT_EQ(err, "cannot read");
}
