/*
 * Randomness, digests, MACs, identifiers and base64: thin wrappers over
 * OpenSSL so that no other file includes it.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "extern.h"

/* Fill buf with n cryptographically random bytes.  Returns WL_OK or
 * WL_ERR_CRYPTO. */
int
wl_random_bytes(void *buf, size_t n)
{
	return RAND_bytes(buf, (int)n) == 1 ? WL_OK : WL_ERR_CRYPTO;
}

/*
 * Random bytes that are made public (ids, nonces), from a pool of this
 * thread's that RAND_bytes() fills 4 KiB at a time: an id takes 10
 * bytes, and each call of RAND_bytes() costs about as much as making the
 * rest of the id (locks, a check for a fork).  A process made by fork()
 * starts with an empty pool (pthread_atfork), so two workers never hand
 * out the same bytes.  Secrets take wl_random_bytes() directly, so that
 * none of theirs wait in memory beforehand.
 */
static __thread struct {
	unsigned char b[4096];
	size_t used;
} pool = {.used = sizeof(pool.b)};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void
pool_forget(void)
{
	pool.used = sizeof(pool.b);
}

static void
pool_register(void)
{
	pthread_atfork(NULL, NULL, pool_forget);
}

int
wl_random_public(void *buf, size_t n)
{
	pthread_once(&pool_once, pool_register);
	if (n > sizeof(pool.b))
		return wl_random_bytes(buf, n);
	if (pool.used + n > sizeof(pool.b)) {
		if (wl_random_bytes(pool.b, sizeof(pool.b)) != WL_OK)
			return WL_ERR_CRYPTO;
		pool.used = 0;
	}
	memcpy(buf, pool.b + pool.used, n);
	pool.used += n;
	return WL_OK;
}

static const char crockford[] = "0123456789abcdefghjkmnpqrstvwxyz";

/* prefix, then the 16 bytes of raw as 26 base32 characters. */
static int
id_encode(const char *prefix, const unsigned char raw[16], char *out)
{
	size_t plen = strlen(prefix), i;
	unsigned acc, bits, o = 0;
	char enc[27];

	/* 128 bits -> 26 chars: the first char carries the top 3 bits. */
	acc = raw[0] >> 5;
	enc[o++] = crockford[acc];
	acc = raw[0] & 0x1f;
	bits = 5;
	for (i = 1; i < 16; i++) {
		acc = (acc << 8) | raw[i];
		bits += 8;
		while (bits >= 5) {
			enc[o++] = crockford[(acc >> (bits - 5)) & 0x1f];
			bits -= 5;
		}
	}
	enc[o] = '\0';
	if (plen + o + 1 > WL_ID_MAX)
		return WL_ERR_INVALID;
	memcpy(out, prefix, plen);
	memcpy(out + plen, enc, o + 1);
	return WL_OK;
}

/* raw's first 6 bytes: ms, most significant first. */
static void
id_time(unsigned char raw[16], int64_t ms)
{
	size_t i;

	for (i = 0; i < 6; i++)
		raw[i] = (unsigned char)((uint64_t)ms >> (40 - 8 * i));
}

/*
 * A new public id: prefix, then 26 base32 characters of 48 bits of
 * millisecond time and 80 random bits.  Time first keeps inserts at the end
 * of the primary key index; the random part makes ids unguessable.
 */
int
wl_id_new(const char *prefix, char *out)
{
	unsigned char raw[16];

	id_time(raw, wl_now_ms());
	if (wl_random_public(raw + 6, 10) != WL_OK)
		return WL_ERR_CRYPTO;
	return id_encode(prefix, raw, out);
}

/* The least id that wl_id_new could make at ms: every id made before ms
 * sorts (as bytes) before it, every id made at ms or later not. */
int
wl_id_at(const char *prefix, int64_t ms, char *out)
{
	unsigned char raw[16] = {0};

	id_time(raw, ms);
	return id_encode(prefix, raw, out);
}

static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void
sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/*
 * SHA-256 of data into out.  OpenSSL's SHA256() looks the digest up by
 * name at every call; the lookup is done once per process.
 */
void
wl_sha256(const void *data, size_t n, unsigned char out[32])
{
	pthread_once(&sha256_once, sha256_fetch);
	if (sha256_md == NULL ||
	    !EVP_Digest(data, n, out, NULL, sha256_md, NULL))
		SHA256(data, n, out);
}

/* SHA-256 of data as 64 lowercase hex characters plus NUL. */
void
wl_sha256_hex(const void *data, size_t n, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[32];
	size_t i;

	wl_sha256(data, n, d);
	for (i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 0xf];
	}
	out[64] = '\0';
}

/*
 * HMAC-SHA256 contexts: one per thread, made at its first MAC and keyed
 * anew for each.  OpenSSL's one-shot HMAC() looks the algorithms up by
 * name and makes a context at every call, which costs twice the MAC of a
 * webhook body.
 */
static EVP_MAC *hmac_alg;
static pthread_key_t hmac_key;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void
hmac_ctx_free(void *c)
{
	EVP_MAC_CTX_free(c);
}

static void
hmac_setup(void)
{
	if ((hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL)) != NULL &&
	    pthread_key_create(&hmac_key, hmac_ctx_free) != 0) {
		EVP_MAC_free(hmac_alg);
		hmac_alg = NULL;
	}
}

static EVP_MAC_CTX *
hmac_ctx(void)
{
	OSSL_PARAM p[] = {OSSL_PARAM_construct_utf8_string(
			      OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
			  OSSL_PARAM_construct_end()};
	EVP_MAC_CTX *c;

	pthread_once(&hmac_once, hmac_setup);
	if (hmac_alg == NULL)
		return NULL;
	if ((c = pthread_getspecific(hmac_key)) != NULL)
		return c;
	if ((c = EVP_MAC_CTX_new(hmac_alg)) == NULL ||
	    !EVP_MAC_CTX_set_params(c, p) ||
	    pthread_setspecific(hmac_key, c) != 0) {
		EVP_MAC_CTX_free(c);
		return NULL;
	}
	return c;
}

/* HMAC-SHA256 of msg under key into out.  Returns WL_OK or
 * WL_ERR_CRYPTO (out of memory inside OpenSSL). */
int
wl_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
	       unsigned char out[32])
{
	EVP_MAC_CTX *c = hmac_ctx();
	unsigned int ulen = 32;
	size_t len;

	if (c && EVP_MAC_init(c, key, keylen, NULL) &&
	    EVP_MAC_update(c, msg, msglen) && EVP_MAC_final(c, out, &len, 32))
		return WL_OK;
	return HMAC(EVP_sha256(), key, (int)keylen, msg, msglen, out, &ulen)
		   ? WL_OK
		   : WL_ERR_CRYPTO;
}

/* Constant-time equality of two n-byte regions: 1 equal, 0 not. */
int
wl_ct_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

/* FNV-1a of n bytes: spreads names over a table's slots; not a digest. */
uint32_t
wl_fnv1a(const void *p, size_t n)
{
	const unsigned char *c = p;
	uint32_t h = 2166136261u;

	while (n-- > 0)
		h = (h ^ *c++) * 16777619u;
	return h;
}

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t
b64_encode(const char *alpha, int pad, const unsigned char *in, size_t n,
	   char *out)
{
	size_t i, o = 0;
	uint32_t v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		out[o++] = alpha[(v >> 6) & 63];
		out[o++] = alpha[v & 63];
	}
	if (n - i == 1) {
		v = (uint32_t)in[i] << 16;
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		if (pad) {
			out[o++] = '=';
			out[o++] = '=';
		}
	} else if (n - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = alpha[v >> 18];
		out[o++] = alpha[(v >> 12) & 63];
		out[o++] = alpha[(v >> 6) & 63];
		if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/* base64url without padding; returns the encoded length. */
size_t
wl_b64url_encode(const unsigned char *in, size_t n, char *out)
{
	return b64_encode(b64url, 0, in, n, out);
}

/* Standard base64 with padding; returns the encoded length. */
size_t
wl_b64_encode(const unsigned char *in, size_t n, char *out)
{
	return b64_encode(b64std, 1, in, n, out);
}

/* Decode unpadded base64 in alphabet alpha.  Returns the decoded length,
 * or -1 on bad or non-canonical input or when it exceeds outsz. */
static long
b64_decode(const char *alpha, const char *in, size_t n, unsigned char *out,
	   size_t outsz)
{
	size_t i, o = 0;
	uint32_t acc = 0;
	int bits = 0;
	const char *p;

	if (n % 4 == 1)
		return -1;
	for (i = 0; i < n; i++) {
		if (in[i] == '\0' || (p = strchr(alpha, in[i])) == NULL)
			return -1;
		acc = (acc << 6) | (uint32_t)(p - alpha);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= outsz)
				return -1;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	/* Leftover bits must be zero for a canonical encoding. */
	if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
		return -1;
	return (long)o;
}

/* Decode unpadded base64url. */
long
wl_b64url_decode(const char *in, size_t n, unsigned char *out, size_t outsz)
{
	return b64_decode(b64url, in, n, out, outsz);
}

/* Decode standard base64, padded or not. */
long
wl_b64_decode(const char *in, size_t n, unsigned char *out, size_t outsz)
{
	while (n > 0 && in[n - 1] == '=')
		n--;
	return b64_decode(b64std, in, n, out, outsz);
}
