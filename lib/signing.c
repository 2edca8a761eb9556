/*
 * Webhook secrets and signatures.  A signing secret is "whsec_" + base64
 * of 32 random bytes (Standard Webhooks).  At rest it is sealed with
 * AES-256-GCM under a key derived from the server secret, so a database
 * dump alone does not reveal it.
 */
#include "config.h"

#include <stdlib.h>

#include <openssl/evp.h>

#include "extern.h"

#define NONCE 12
#define TAG 16

/* A new signing secret into out (at least 64 bytes). */
int
wl_whsec_new(char *out)
{
	unsigned char raw[32];

	if (wl_random_bytes(raw, sizeof(raw)) != WL_OK)
		return WL_ERR_CRYPTO;
	memcpy(out, "whsec_", 6);
	wl_b64_encode(raw, sizeof(raw), out + 6);
	return WL_OK;
}

/* The sealing key, derived from the server secret; the last derivation
 * of each thread is kept.  Returns WL_OK or WL_ERR_CRYPTO. */
static int
seal_key(const unsigned char *server, unsigned char key[32])
{
	static const char label[] = "waitlist webhook secret v1";
	static __thread unsigned char from[WL_SECRET_LEN], derived[32];
	static __thread int have;

	if (!have || !wl_ct_equal(from, server, WL_SECRET_LEN)) {
		have = 0;
		if (wl_hmac_sha256(server, WL_SECRET_LEN, label,
				   sizeof(label) - 1, derived) != WL_OK)
			return WL_ERR_CRYPTO;
		memcpy(from, server, WL_SECRET_LEN);
		have = 1;
	}
	memcpy(key, derived, sizeof(derived));
	return WL_OK;
}

/*
 * Seal n bytes as base64 of nonce || ciphertext || tag (AES-256-GCM under
 * a key derived from the server secret).  Returns a new string (caller
 * frees) or NULL.
 */
char *
wl_seal(const unsigned char *server, const void *plain, size_t n)
{
	unsigned char key[32], *buf = NULL;
	EVP_CIPHER_CTX *c = NULL;
	char *out = NULL;
	int len, ok;

	if (n > 16 << 20 || (buf = malloc(NONCE + n + TAG)) == NULL ||
	    wl_random_public(buf, NONCE) != WL_OK ||
	    (c = EVP_CIPHER_CTX_new()) == NULL ||
	    seal_key(server, key) != WL_OK)
		goto out;
	ok = EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, buf) == 1 &&
	     EVP_EncryptUpdate(c, buf + NONCE, &len, plain, (int)n) == 1 &&
	     EVP_EncryptFinal_ex(c, buf + NONCE + len, &len) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, TAG,
				 buf + NONCE + n) == 1;
	if (ok && (out = malloc(4 * ((NONCE + n + TAG + 2) / 3) + 1)) != NULL)
		wl_b64_encode(buf, NONCE + n + TAG, out);
out:
	explicit_bzero(key, sizeof(key));
	EVP_CIPHER_CTX_free(c);
	free(buf);
	return out;
}

/*
 * Open what wl_seal() made.  Returns the plaintext, NUL-terminated, with
 * its length in *n (caller frees), or NULL when it was tampered with.
 */
char *
wl_unseal(const unsigned char *server, const char *sealed, size_t *n)
{
	size_t sl = strlen(sealed), cap = sl / 4 * 3 + 3;
	unsigned char key[32], *buf = NULL;
	EVP_CIPHER_CTX *c = NULL;
	char *plain = NULL;
	long bl;
	int len, ok = 0;

	if ((buf = malloc(cap)) == NULL ||
	    (bl = wl_b64_decode(sealed, sl, buf, cap)) < NONCE + TAG ||
	    (plain = malloc((size_t)bl - NONCE - TAG + 1)) == NULL ||
	    (c = EVP_CIPHER_CTX_new()) == NULL ||
	    seal_key(server, key) != WL_OK)
		goto out;
	*n = (size_t)bl - NONCE - TAG;
	ok = EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, buf) == 1 &&
	     EVP_DecryptUpdate(c, (unsigned char *)plain, &len, buf + NONCE,
			       (int)*n) == 1 &&
	     EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, TAG,
				 buf + NONCE + *n) == 1 &&
	     EVP_DecryptFinal_ex(c, (unsigned char *)plain + len, &len) == 1;
	explicit_bzero(key, sizeof(key));
	if (ok)
		plain[*n] = '\0';
out:
	EVP_CIPHER_CTX_free(c);
	free(buf);
	if (!ok) {
		free(plain);
		plain = NULL;
	}
	return plain;
}

/* Seal a signing secret into out (WL_SEALED_MAX bytes). */
int
wl_secret_seal(const unsigned char *server, const char *plain, char *out)
{
	char *sealed;
	int rc = WL_ERR_CRYPTO;

	if (strlen(plain) >= 128 || (sealed = wl_seal(server, plain,
						      strlen(plain))) == NULL)
		return rc;
	if (strlen(sealed) < WL_SEALED_MAX) {
		memcpy(out, sealed, strlen(sealed) + 1);
		rc = WL_OK;
	}
	free(sealed);
	return rc;
}

/* Open a sealed signing secret into plain (at least 128 bytes). */
int
wl_secret_open(const unsigned char *server, const char *sealed, char *plain)
{
	size_t n;
	char *p = wl_unseal(server, sealed, &n);
	int rc = WL_ERR_CRYPTO;

	if (p != NULL && n < 128) {
		memcpy(plain, p, n + 1);
		rc = WL_OK;
	}
	if (p)
		explicit_bzero(p, n);
	free(p);
	return rc;
}

/*
 * The Standard Webhooks signature "v1,<base64 HMAC-SHA256 of
 * id.timestamp.body>" under secret ("whsec_..."), into out (at least 64
 * bytes).  Returns WL_OK, WL_ERR_INVALID for a malformed secret, or
 * WL_ERR_NOMEM or WL_ERR_CRYPTO.
 */
int
wl_webhook_sign(const char *secret, const char *id, long long ts,
		const char *body, size_t len, char *out)
{
	unsigned char key[64], mac[32];
	struct wl_buf msg = {0};
	long klen;
	int rc;

	if (strncmp(secret, "whsec_", 6) == 0)
		secret += 6;
	klen = wl_b64_decode(secret, strlen(secret), key, sizeof(key));
	if (klen <= 0)
		return WL_ERR_INVALID;
	if (wl_buf_printf(&msg, "%s.%lld.", id, ts) != WL_OK ||
	    wl_buf_append(&msg, body, len) != WL_OK) {
		wl_buf_free(&msg);
		return WL_ERR_NOMEM;
	}
	rc = wl_hmac_sha256(key, (size_t)klen, msg.p, msg.len, mac);
	wl_buf_free(&msg);
	if (rc != WL_OK)
		return rc;
	memcpy(out, "v1,", 3);
	wl_b64_encode(mac, sizeof(mac), out + 3);
	return WL_OK;
}
