# shellcheck shell=bash disable=SC2034
# SPDX-License-Identifier: MIT
# Sourced (bash) by the scripts that keep things outside the checkout.
#
#   cache              $VNPU_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/vnpu
#   keep_newest N DIR PATTERN [EXCLUDE]
#                      removes all but the N newest entries of DIR whose
#                      name matches PATTERN (and not EXCLUDE); an absent or
#                      empty DIR is fine, as on a machine's first run

cache=${VNPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vnpu}

keep_newest() {
	local n=$1 dir=$2 pattern=$3 exclude=${4:-}
	[ -d "$dir" ] || return 0
	find "$dir" -mindepth 1 -maxdepth 1 -name "$pattern" \
		${exclude:+! -name "$exclude"} -printf '%T@ %p\0' |
		sort -z -r -n | tail -z -n +"$((n + 1))" | cut -z -d' ' -f2- |
		xargs -0 -r rm -rf --one-file-system --
}
