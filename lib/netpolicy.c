/*
 * Where webhooks may go.  The operator lists allowed hosts; keys of type
 * zapier may only use the Zapier callback hosts; plain http and private
 * or loopback addresses are refused unless the operator marks the host
 * insecure-allowed.  Addresses are checked after resolution here, and
 * again by the deliverer on the address it actually connects to, so a
 * name that later resolves elsewhere (DNS rebinding) is caught.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "extern.h"

/* An entry of a host list, without the spaces around it (in place). */
static char *
entry(char *e)
{
	size_t el;

	while (*e == ' ')
		e++;
	for (el = strlen(e); el > 0 && e[el - 1] == ' '; el--)
		e[el - 1] = '\0';
	return e;
}

/* Is host in the comma-separated list?  "*.example.com" or
 * ".example.com" entries match subdomains. */
int
wl_host_listed(const char *list, const char *host)
{
	char **v = NULL;
	size_t n = 0, i, hl = strlen(host), el;
	int found = 0;

	if (wl_split_list(list ? list : "", &v, &n) < 0)
		return 0;
	for (i = 0; i < n && !found; i++) {
		const char *e = entry(v[i]);
		if (e[0] == '*')
			e++;
		if ((el = strlen(e)) == 0)
			continue;
		if (e[0] == '.')
			found = hl > el && strcasecmp(host + hl - el, e) == 0;
		else
			found = strcasecmp(host, e) == 0;
	}
	wl_strv_free(v, n);
	return found;
}

/* A host name: labels of letters, digits, '-' and '_' (1 to 63 each, no
 * '-' at either end), 1 to 253 characters in all. */
static int
host_name_ok(const char *s, size_t len)
{
	size_t i, label = 0;

	if (len == 0 || len > 253)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return 0;
			label = 0;
		} else if (isalnum(c) || c == '_' || c == '-') {
			if ((label == 0 && c == '-') || ++label > 63)
				return 0;
		} else
			return 0;
	}
	return label > 0 && s[len - 1] != '-';
}

/*
 * Check a host list as wl_host_listed() reads it: comma-separated names
 * ("*.name" or ".name" for subdomains) or IP addresses, spaces around
 * them allowed.  Returns 0, or -1 with the first bad entry in bad.
 */
int
wl_host_list_check(const char *list, char *bad, size_t badsz)
{
	char **v = NULL, ip[16];
	size_t n = 0, i;
	int ok = 1;

	if (wl_split_list(list ? list : "", &v, &n) < 0) {
		snprintf(bad, badsz, "(out of memory)");
		return -1;
	}
	for (i = 0; i < n && ok; i++) {
		const char *e = entry(v[i]), *name = e;
		if (*e == '\0' || inet_pton(AF_INET, e, ip) == 1 ||
		    inet_pton(AF_INET6, e, ip) == 1)
			continue;
		if (name[0] == '*' && name[1] == '.')
			name++;
		if (name[0] == '.')
			name++;
		if (!(ok = host_name_ok(name, strlen(name))))
			snprintf(bad, badsz, "%s", e);
	}
	wl_strv_free(v, n);
	return ok ? 0 : -1;
}

/* Is the textual IPv4/IPv6 address private, loopback, link-local,
 * unspecified or multicast?  Unparseable counts as private. */
int
wl_addr_private(const char *ip)
{
	unsigned char a[16];

	if (inet_pton(AF_INET, ip, a) == 1)
		return a[0] == 10 || a[0] == 127 || a[0] == 0 ||
		       (a[0] == 172 && (a[1] & 0xf0) == 16) ||
		       (a[0] == 192 && a[1] == 168) ||
		       (a[0] == 169 && a[1] == 254) ||
		       (a[0] == 100 && (a[1] & 0xc0) == 64) || a[0] >= 224;
	if (inet_pton(AF_INET6, ip, a) == 1) {
		static const unsigned char zero[12], v4map[12] = {
		    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff},
		    nat64[12] = {0, 0x64, 0xff, 0x9b};
		const unsigned char *v4 = NULL;
		char text[INET_ADDRSTRLEN];

		/* Addresses that lead to an IPv4 one are judged by it:
		 * mapped, compatible (:: and ::1 included), NAT64, 6to4. */
		if (memcmp(a, v4map, 12) == 0 || memcmp(a, zero, 12) == 0 ||
		    memcmp(a, nat64, 12) == 0)
			v4 = a + 12;
		else if (a[0] == 0x20 && a[1] == 0x02)
			v4 = a + 2;
		if (v4) {
			inet_ntop(AF_INET, v4, text, sizeof(text));
			return wl_addr_private(text);
		}
		return (a[0] & 0xfe) == 0xfc ||		/* unique local */
		       (a[0] == 0xfe && (a[1] & 0x80)) || /* link, site local */
		       a[0] == 0xff;
	}
	return 1;
}

/*
 * Check a destination URL for a key of type itype.  On success returns 0
 * and copies the host into host.  Otherwise returns -1 with a reason.
 */
int
wl_dest_check(const struct wl_config *cfg, enum wl_itype itype,
	      const char *url, char *host, size_t hostsz, char *why,
	      size_t whysz)
{
	char *scheme = NULL, *h = NULL, *user = NULL, *port = NULL;
	struct addrinfo hints, *res = NULL, *ai;
	int insecure, rc = -1;
	CURLU *u = curl_url();

	if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK) {
		snprintf(why, whysz, "url must be an absolute http(s) URL");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		snprintf(why, whysz, "url must not carry credentials");
		goto out;
	}
	/* (libcurl takes port 0, and every attempt would then fail.) */
	if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK &&
	    strtol(port, NULL, 10) == 0) {
		snprintf(why, whysz, "url port must be 1 to 65535");
		goto out;
	}
	/* Bracketed IPv6 literals come back with their brackets. */
	if (h[0] == '[') {
		size_t n = strlen(h);
		memmove(h, h + 1, n);
		if (n > 1 && h[n - 2] == ']')
			h[n - 2] = '\0';
	}
	snprintf(host, hostsz, "%s", h);
	insecure = wl_host_listed(cfg->insecure_hosts, h);
	if (itype == WL_ITYPE_ZAPIER) {
		if (!wl_host_listed(cfg->zapier_hosts, h)) {
			snprintf(why, whysz, "Zapier connections may only "
				 "deliver to Zapier's callback hosts");
			goto out;
		}
	} else if (!insecure && !wl_host_listed(cfg->allowed_hosts, h)) {
		snprintf(why, whysz, "%s is not an allowed webhook "
			 "destination host", h);
		goto out;
	}
	if (strcasecmp(scheme, "https") != 0 &&
	    !(insecure && strcasecmp(scheme, "http") == 0)) {
		snprintf(why, whysz, "url must use https");
		goto out;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(h, NULL, &hints, &res) != 0) {
		snprintf(why, whysz, "%s does not resolve", h);
		goto out;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		char ip[INET6_ADDRSTRLEN] = "";
		const void *addr =
		    ai->ai_family == AF_INET
			? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
			: (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		inet_ntop(ai->ai_family, addr, ip, sizeof(ip));
		if (!insecure && wl_addr_private(ip)) {
			snprintf(why, whysz, "%s resolves to a private or "
				 "loopback address", h);
			goto out;
		}
	}
	rc = 0;
out:
	if (res)
		freeaddrinfo(res);
	curl_free(scheme);
	curl_free(h);
	curl_free(user);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}
