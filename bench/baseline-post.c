/*
 * baseline-post: the deliverer's limit.  Posts the given event bodies,
 * signed the way the deliverer signs them (Standard Webhooks: webhook-id,
 * webhook-timestamp, webhook-signature "v1,<base64 HMAC-SHA256 of
 * id.timestamp.body>"), to one URL with libcurl multi, --concurrency
 * transfers at a time over kept-alive connections, as fast as it can.
 * No database: this is what sending alone costs.
 *
 * Input (--in): one event per line, "<event id>\t<JSON body>".
 * Output (stdout): {"sent":N,"ok":N,"seconds":S,"rate":R}
 *
 * usage: baseline-post --url URL --secret whsec_... --in FILE
 *                      [--concurrency N]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

struct item {
	char *id, *body;
	size_t len;
};

struct slot {
	CURL *easy;
	struct curl_slist *headers;
};

static unsigned char key[64];
static int keylen;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static void
sign(const struct item *it, long long ts, char *out)
{
	unsigned char mac[32];
	unsigned int maclen = sizeof(mac);
	char prefix[160];
	HMAC_CTX *h;
	int n = snprintf(prefix, sizeof(prefix), "%s.%lld.", it->id, ts);

	/* HMAC_CTX is deprecated in OpenSSL 3 but still the cheapest here. */
	h = HMAC_CTX_new();
	HMAC_Init_ex(h, key, keylen, EVP_sha256(), NULL);
	HMAC_Update(h, (unsigned char *)prefix, (size_t)n);
	HMAC_Update(h, (unsigned char *)it->body, it->len);
	HMAC_Final(h, mac, &maclen);
	HMAC_CTX_free(h);
	memcpy(out, "v1,", 3);
	EVP_EncodeBlock((unsigned char *)out + 3, mac, (int)maclen);
}

static void
start(CURLM *m, struct slot *s, const char *url, const struct item *it)
{
	char hdr[256], sig[64];
	long long ts = (long long)time(NULL);

	curl_slist_free_all(s->headers);
	s->headers = NULL;
	sign(it, ts, sig);
	snprintf(hdr, sizeof(hdr), "webhook-id: %s", it->id);
	s->headers = curl_slist_append(s->headers, hdr);
	snprintf(hdr, sizeof(hdr), "webhook-timestamp: %lld", ts);
	s->headers = curl_slist_append(s->headers, hdr);
	snprintf(hdr, sizeof(hdr), "webhook-signature: %s", sig);
	s->headers = curl_slist_append(s->headers, hdr);
	s->headers = curl_slist_append(s->headers,
				       "Content-Type: application/json");
	s->headers = curl_slist_append(s->headers,
				       "User-Agent: waitlist-webhooks/1.0");
	s->headers = curl_slist_append(s->headers, "Expect:");
	curl_easy_setopt(s->easy, CURLOPT_URL, url);
	curl_easy_setopt(s->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, it->body);
	curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, (long)it->len);
	curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->headers);
	curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
	curl_multi_add_handle(m, s->easy);
}

static struct item *
load(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	struct item *v = NULL;
	size_t cap = 0, len = 0;
	char *line = NULL;
	ssize_t r;

	*n = 0;
	if (f == NULL)
		return NULL;
	while ((r = getline(&line, &len, f)) > 0) {
		char *tab = strchr(line, '\t');
		if (tab == NULL)
			continue;
		while (r > 0 && (line[r - 1] == '\n' || line[r - 1] == '\r'))
			line[--r] = '\0';
		*tab = '\0';
		if (*n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = realloc(v, cap * sizeof(*v));
		}
		v[*n].id = strdup(line);
		v[*n].body = strdup(tab + 1);
		v[*n].len = strlen(tab + 1);
		(*n)++;
	}
	free(line);
	fclose(f);
	return v;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"url", required_argument, NULL, 'u'},
	    {"secret", required_argument, NULL, 's'},
	    {"in", required_argument, NULL, 'i'},
	    {"concurrency", required_argument, NULL, 'c'},
	    {NULL, 0, NULL, 0}};
	const char *url = NULL, *secret = NULL, *in = NULL;
	int ch, conc = 16, running, i;
	size_t n, next = 0, done = 0, ok = 0;
	struct item *items;
	struct slot *slots;
	double t0, t1;
	CURLMsg *msg;
	CURLM *m;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u': url = optarg; break;
		case 's': secret = optarg; break;
		case 'i': in = optarg; break;
		case 'c': conc = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!url || !secret || !in || conc < 1) {
		fprintf(stderr, "usage: baseline-post --url URL --secret "
				"whsec_... --in FILE [--concurrency N]\n");
		return 2;
	}
	if (strncmp(secret, "whsec_", 6) == 0)
		secret += 6;
	{
		size_t sl = strlen(secret);
		int pad = (sl > 0 && secret[sl - 1] == '=') +
			  (sl > 1 && secret[sl - 2] == '=');
		if (sl % 4 || sl / 4 * 3 > sizeof(key) ||
		    (keylen = EVP_DecodeBlock(key, (unsigned char *)secret,
					      (int)sl)) < 0) {
			fprintf(stderr, "baseline-post: bad secret\n");
			return 1;
		}
		keylen -= pad;
	}
	if ((items = load(in, &n)) == NULL || n == 0) {
		fprintf(stderr, "baseline-post: no events in %s\n", in);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)conc);
	curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)conc);
	slots = calloc((size_t)conc, sizeof(*slots));
	t0 = now_s();
	for (i = 0; i < conc && next < n; i++) {
		slots[i].easy = curl_easy_init();
		start(m, &slots[i], url, &items[next++]);
	}
	while (done < n) {
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &running)) != NULL) {
			struct slot *s;
			long status = 0;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
					  (char **)&s);
			if (msg->data.result == CURLE_OK &&
			    curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE,
					      &status) == CURLE_OK &&
			    status >= 200 && status < 300)
				ok++;
			done++;
			curl_multi_remove_handle(m, s->easy);
			if (next < n)
				start(m, s, url, &items[next++]);
		}
		if (done < n)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	t1 = now_s();
	printf("{\"sent\":%zu,\"ok\":%zu,\"seconds\":%.3f,\"rate\":%.1f}\n", n,
	       ok, t1 - t0, n / (t1 - t0));
	for (i = 0; i < conc; i++) {
		if (slots[i].easy)
			curl_easy_cleanup(slots[i].easy);
		curl_slist_free_all(slots[i].headers);
	}
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return ok == n ? 0 : 1;
}
