// SPDX-License-Identifier: GPL-2.0
#include "ptwalk/web_config.hpp"

#include <crypt.h>
#include <fstream>
#include <gnutls/gnutls.h>
#include <memory>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

namespace ptwalk {

namespace {

bool is_bcrypt(const std::string &h)
{
	return h.size() == 60 &&
	       (h.rfind("$2a$", 0) == 0 || h.rfind("$2b$", 0) == 0 || h.rfind("$2y$", 0) == 0);
}

// The keys of a mapping, each one of `known`; false with *err naming the first other.
bool only_keys(const YAML::Node &n, const std::string &where, const std::set<std::string> &known,
	       std::string *err)
{
	for (const auto &kv : n) {
		const std::string k = kv.first.as<std::string>();
		if (!known.count(k)) {
			*err = where + k + ": not supported";
			return false;
		}
	}
	return true;
}

bool read_pem(const std::string &dir, const std::string &file, const std::string &what,
	      std::string *out, std::string *err)
{
	const std::string path = file.empty() || file[0] == '/' ? file : dir + "/" + file;
	std::ifstream f(path, std::ios::binary);
	std::ostringstream ss;
	if (f)
		ss << f.rdbuf();
	if (!f || ss.str().find("-----BEGIN ") == std::string::npos) {
		*err = what + " " + path + (f ? ": not PEM" : ": cannot read");
		return false;
	}
	*out = ss.str();
	return true;
}

// What GnuTLS (the TLS of libmicrohttpd) makes of the PEM files, so that
// a certificate that is not one, or a key of another certificate, is
// refused with the file's name and not by the server's start.
bool check_tls(const WebConfig &c, std::string *err)
{
	gnutls_certificate_credentials_t cred = nullptr;
	if (gnutls_certificate_allocate_credentials(&cred) != 0) {
		*err = "GnuTLS: cannot allocate credentials";
		return false;
	}
	std::unique_ptr<gnutls_certificate_credentials_st,
			decltype(&gnutls_certificate_free_credentials)>
		owner(cred, &gnutls_certificate_free_credentials);
	auto datum = [](const std::string &s) {
		return gnutls_datum_t{
			reinterpret_cast<unsigned char *>(const_cast<char *>(s.data())),
			unsigned(s.size())};
	};
	const gnutls_datum_t cert = datum(c.cert_pem), key = datum(c.key_pem);
	if (int rc = gnutls_certificate_set_x509_key_mem(cred, &cert, &key, GNUTLS_X509_FMT_PEM);
	    rc < 0) {
		*err = std::string("cert_file and key_file: ") + gnutls_strerror(rc);
		return false;
	}
	if (!c.client_ca_pem.empty()) {
		const gnutls_datum_t ca = datum(c.client_ca_pem);
		int n = gnutls_certificate_set_x509_trust_mem(cred, &ca, GNUTLS_X509_FMT_PEM);
		if (n <= 0) {
			*err = std::string("client_ca_file: ") +
			       (n < 0 ? gnutls_strerror(n) : "no certificate in it");
			return false;
		}
	}
	return true;
}

} // namespace

bool bcrypt_matches(const std::string &hash, const std::string &password)
{
	if (!is_bcrypt(hash))
		return false;
	auto cd = std::make_unique<crypt_data>(); // 32 KiB: not on a server thread's stack
	const char *h = crypt_rn(password.c_str(), hash.c_str(), cd.get(), sizeof(*cd));
	if (!h || std::string(h).size() != hash.size())
		return false;
	unsigned char diff = 0;
	for (size_t i = 0; i < hash.size(); i++)
		diff |= static_cast<unsigned char>(h[i] ^ hash[i]);
	return diff == 0;
}

bool load_web_config(const std::string &path, WebConfig *out, std::string *err)
{
	WebConfig c;
	YAML::Node root;
	try {
		root = YAML::LoadFile(path);
	} catch (const YAML::BadFile &) {
		*err = "cannot read";
		return false;
	} catch (const YAML::Exception &e) {
		*err = "not YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")";
		return false;
	}
	if (!root.IsMap() && !root.IsNull()) {
		*err = "want a mapping (tls_server_config, basic_auth_users)";
		return false;
	}
	const size_t slash = path.rfind('/');
	const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
	try {
		if (!only_keys(root, "", {"tls_server_config", "basic_auth_users"}, err))
			return false;
		if (const YAML::Node t = root["tls_server_config"]; t && !t.IsNull()) {
			if (!t.IsMap()) {
				*err = "tls_server_config: want a mapping";
				return false;
			}
			if (!only_keys(t, "tls_server_config.",
				       {"cert_file", "key_file", "client_ca_file",
					"client_auth_type"},
				       err))
				return false;
			const std::string cert = t["cert_file"] ? t["cert_file"].as<std::string>()
								: "";
			const std::string key = t["key_file"] ? t["key_file"].as<std::string>()
							      : "";
			if (cert.empty() || key.empty()) {
				*err = std::string("tls_server_config: ") +
				       (cert.empty() ? "cert_file" : "key_file") + " missing";
				return false;
			}
			if (!read_pem(dir, cert, "cert_file", &c.cert_pem, err) ||
			    !read_pem(dir, key, "key_file", &c.key_pem, err))
				return false;
			const std::string ca =
				t["client_ca_file"] ? t["client_ca_file"].as<std::string>() : "";
			const std::string auth = t["client_auth_type"]
							 ? t["client_auth_type"].as<std::string>()
							 : "NoClientCert";
			if (auth == "RequireAndVerifyClientCert") {
				if (ca.empty()) {
					*err = "tls_server_config: RequireAndVerifyClientCert needs client_ca_file";
					return false;
				}
				if (!read_pem(dir, ca, "client_ca_file", &c.client_ca_pem, err))
					return false;
			} else if (auth != "NoClientCert") {
				*err = "tls_server_config.client_auth_type: " + auth +
				       " not supported (NoClientCert or RequireAndVerifyClientCert)";
				return false;
			} else if (!ca.empty()) {
				*err = "tls_server_config: client_ca_file given but client_auth_type is "
				       "not RequireAndVerifyClientCert";
				return false;
			}
		}
		if (const YAML::Node u = root["basic_auth_users"]; u && !u.IsNull()) {
			if (!u.IsMap()) {
				*err = "basic_auth_users: want a mapping of user: bcrypt hash";
				return false;
			}
			for (const auto &kv : u) {
				const std::string name = kv.first.as<std::string>();
				const std::string hash =
					kv.second.IsScalar() ? kv.second.as<std::string>() : "";
				if (name.empty() || name.find(':') != std::string::npos) {
					*err = "basic_auth_users: user '" + name +
					       "' is not a user name";
					return false;
				}
				if (!is_bcrypt(hash)) {
					*err = "basic_auth_users." + name +
					       ": not a bcrypt hash ($2y$...)";
					return false;
				}
				c.users[name] = hash;
			}
		}
	} catch (const YAML::Exception &e) {
		*err = "not the expected shape: " + e.msg + " (line " +
		       std::to_string(e.mark.line + 1) + ")";
		return false;
	}
	if (c.tls() && !check_tls(c, err))
		return false;
	*out = std::move(c);
	return true;
}

} // namespace ptwalk
