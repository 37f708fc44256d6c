/* Debian's OpenSSL 3 (libssl-dev) for the grid links' TLS (IEC 62351-3, IEEE 2030.5). The include
 * path comes from pkg-config (openssl). What OpenSSL offers only as a macro over SSL_CTX_ctrl or
 * SSL_ctrl becomes a prefixed inline function here, so Swift can call it. */
#ifndef BESSD_COPENSSL_SHIM_H
#define BESSD_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

/* The PEM file type, for SSL_CTX_use_PrivateKey_file and X509_load_crl_file. */
static const int bessd_ssl_filetype_pem = SSL_FILETYPE_PEM;

/* A subject printed as RFC 2253 says, for X509_NAME_print_ex. */
static const unsigned long bessd_xn_flag_rfc2253 = XN_FLAG_RFC2253;

/* SSL_CTX_set_min_proto_version / SSL_CTX_set_max_proto_version (0 for the library's bound). */
static inline int bessd_ssl_ctx_set_versions(SSL_CTX *ctx, int minimum, int maximum) {
    if (SSL_CTX_set_min_proto_version(ctx, minimum) != 1) return 0;
    return SSL_CTX_set_max_proto_version(ctx, maximum) == 1;
}

/* Non-blocking writes that may return part of a buffer, retried from a buffer that may move; no
 * compression, no renegotiation started by the peer, the server's cipher order; a peer that closes
 * its socket without close_notify ends the stream (IEC 104 frames carry their own lengths). */
static inline void bessd_ssl_ctx_harden(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE
                             | SSL_OP_IGNORE_UNEXPECTED_EOF);
}

/* SSL_set_tlsext_host_name: the server name a client sends (SNI). */
static inline int bessd_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
#endif
