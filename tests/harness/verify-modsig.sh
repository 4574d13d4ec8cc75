#!/usr/bin/env bash
# Checks a kernel module's appended signature (the format scripts/sign-file
# writes: module, PKCS#7 signature, struct module_signature, magic) against
# a certificate, with openssl: exit 0 if it verifies.
# Usage: verify-modsig.sh MODULE(.ko, .ko.xz, .ko.zst) CERT(DER or PEM)
set -euo pipefail
ko=$1 cert=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $ko in
*.xz) xz -dc "$ko" >"$tmp/m" ;;
*.zst) zstd -qdc "$ko" >"$tmp/m" ;;
*) cp "$ko" "$tmp/m" ;;
esac
magic='~Module signature appended~'
size=$(stat -c %s "$tmp/m")
[ "$(tail -c 28 "$tmp/m" | head -c 27)" = "$magic" ] || { echo "$ko: no signature appended" >&2; exit 1; }
# struct module_signature: 12 bytes before the magic, sig_len big-endian last.
siglen=$(tail -c 32 "$tmp/m" | head -c 4 | od -An -tu1 | awk '{ print (($1 * 256 + $2) * 256 + $3) * 256 + $4 }')
datalen=$((size - 28 - 12 - siglen))
head -c "$datalen" "$tmp/m" >"$tmp/data"
tail -c +"$((datalen + 1))" "$tmp/m" | head -c "$siglen" >"$tmp/sig"
openssl x509 -in "$cert" -inform DER -out "$tmp/cert.pem" 2>/dev/null ||
	openssl x509 -in "$cert" -out "$tmp/cert.pem"
openssl cms -verify -binary -inform DER -in "$tmp/sig" -content "$tmp/data" \
	-certfile "$tmp/cert.pem" -nointern -noverify -out /dev/null
