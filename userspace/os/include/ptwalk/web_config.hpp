// SPDX-License-Identifier: GPL-2.0
// --web-config FILE: TLS and basic auth for monitor --serve, in the
// format of the Prometheus exporter-toolkit (node_exporter's
// --web.config.file), the part of it ptwalk serves:
//
//   tls_server_config:
//     cert_file: server.crt          # PEM; relative to the file's directory
//     key_file: server.key
//     client_ca_file: ca.crt         # optional: clients must present a
//     client_auth_type: RequireAndVerifyClientCert  # certificate it signed
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hashes only
//
// Anything else (another key, another client_auth_type, a hash that is
// not bcrypt) is refused when the file is read, not ignored.
#pragma once

#include <map>
#include <string>

namespace ptwalk {

struct WebConfig {
	std::string cert_pem, key_pem; // both or neither: TLS
	std::string client_ca_pem;     // non-empty: a verified client certificate required
	std::map<std::string, std::string> users; // name -> bcrypt hash; empty: no auth
	bool tls() const { return !cert_pem.empty(); }
};

// Reads and checks the file (and the PEM files it names). false with
// *err ("tls_server_config: key_file missing") when it is not usable.
bool load_web_config(const std::string &path, WebConfig *out, std::string *err);

// Whether password matches the bcrypt hash (libxcrypt's crypt_rn);
// thread-safe, constant time in the comparison.
bool bcrypt_matches(const std::string &hash, const std::string &password);

} // namespace ptwalk
