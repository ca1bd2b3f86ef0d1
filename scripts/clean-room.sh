#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's main command as a newcomer runs it: in a minimal Debian root
# of this machine's release (/etc/os-release; another with --suite) made
# with debootstrap (minbase
# plus git, sudo and ca-certificates), a clean clone of the commit under
# test, run by an ordinary user who has sudo. Nothing of this machine's
# builds or caches is visible in there: QEMU, vnpu.ko, the guest and user
# space are built from nothing. CI runs it after scripts/test.sh (.ci/run).
#
#   scripts/clean-room.sh [--keep] [--ref REF] [--command CMD]
#                         [--debs DIR] [--results DIR] [--suite SUITE]
#
# --ref      the commit to test (default HEAD; uncommitted changes are not
#            part of it)
# --command  what to run in the clone instead of scripts/run.sh (bash -lc);
#            its exit status is the verdict
# --keep     keep the root afterwards (its path is printed)
# --debs     copy DIR's .deb files (and torch_vnpu wheel) into the root, at
#            ~/debs
# --results  after the run, copy what is in the clone's results/ directory
#            (if the command made one) into DIR
# --suite    the Debian release of the root (default this machine's), from
#            the same archive: trixie on a Debian 12 machine gives Debian
#            13's packages (its PyTorch 2.6, scripts/torch-suite.sh)
#
# With the default command the run passes when scripts/run.sh exits 0, the
# workloads ran in the VM through vnpu.ko (not on the simulator fallback)
# and every workload row says PASS. Prints the time of each stage.
#
# The Debian archive is the one this machine's apt sources use (nothing
# here names a mirror). pip is set up in the root as on this machine: its
# PIP_* variables, its pip.conf files (/etc/pip.conf, /etc/xdg/pip/, the
# caller's own, which the root's users get) and the constraint files they
# name are copied in, and the local directories they name (find-links, a
# file: index and the directories its pages link to) are mounted read-only
# at the same paths. The template root ($VNPU_CACHE/clean-room/template,
# template-SUITE for another release; remade after 7 days or when the
# archive changes) is kept between runs;
# each run works on a copy. The mounts (proc, sys, dev) live in a private
# mount namespace where one can be made, are unmounted on any exit and
# vanish with it; a root is only removed when nothing is mounted under it.
# Needs root (or sudo).
set -euo pipefail
caller_pwd=$PWD
cd "$(dirname "$0")/.."
repo=$PWD
self=$repo/scripts/clean-room.sh

# shellcheck source=scripts/lib/cache.sh
. scripts/lib/cache.sh

log() { echo "clean-room: $*" >&2; }
die() { log "$*"; exit 2; }

# ---- inside the root's mounts (a private namespace where one can be made) ------
# clean-room.sh --inside ROOT USER CMD: mounts, runs CMD as USER in the
# chroot, unmounts.
if [ "${1:-}" = --inside ]; then
	root=$2 user=$3 cmd=$4
	shift 4 # the rest: directories to mount read-only at the same path
	mounted=()
	unmount_all() {
		local i
		for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
			umount -R "${mounted[i]}" 2>/dev/null ||
				umount -R -l "${mounted[i]}" || true
		done
	}
	trap unmount_all EXIT
	mount -t proc proc "$root/proc" && mounted+=("$root/proc")
	mount -t sysfs sysfs "$root/sys" && mounted+=("$root/sys")
	mount --rbind /dev "$root/dev" && mounted+=("$root/dev")
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm" &&
		mounted+=("$root/dev/shm")
	for d in "$@"; do
		mkdir -p "$root$d"
		mount --bind "$d" "$root$d" && mounted+=("$root$d") &&
			mount -o remount,bind,ro "$root$d"
	done
	# pip's settings from the environment (the files are in the root)
	pip_env=()
	while IFS= read -r v; do
		pip_env+=("$v=${!v}")
	done < <(compgen -e | grep '^PIP_' || true)
	home=/root
	[ "$user" = root ] || home=/home/$user
	set +e
	chroot --userspec="$user:$user" --groups="$user" "$root" \
		/usr/bin/env -i HOME="$home" USER="$user" LOGNAME="$user" \
		TERM=dumb LANG=C.UTF-8 "${pip_env[@]}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/bash -lc "cd ~/vnpu && $cmd"
	rc=$?
	set -e
	exit $rc
fi

# ---- options ------------------------------------------------------------------
keep=0
ref=HEAD
cmd=""
debs=""
results=""
suite=""
while [ $# -gt 0 ]; do
	case $1 in
	--keep) keep=1; shift ;;
	--ref) ref=${2:?}; shift 2 ;;
	--command) cmd=${2:?}; shift 2 ;;
	--debs) debs=$(cd "$caller_pwd" && realpath -e -- "${2:?}"); shift 2 ;;
	--results) results=$(cd "$caller_pwd" && realpath -m -- "${2:?}"); shift 2 ;;
	--suite) suite=${2:?}; shift 2 ;;
	*)
		sed -n '11,26p' "$0" | sed 's/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done
commit=$(git -C "$repo" rev-parse --verify "$ref^{commit}") ||
	die "no commit $ref"

if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null ||
		die "needs root (debootstrap, chroot, mounts); run it as root"
	args=(--ref "$commit")
	[ -z "$cmd" ] || args+=(--command "$cmd")
	[ $keep -eq 0 ] || args+=(--keep)
	[ -z "$debs" ] || args+=(--debs "$debs")
	[ -z "$results" ] || args+=(--results "$results")
	[ -z "$suite" ] || args+=(--suite "$suite")
	# pip's settings go along: PIP_* and where the caller's pip.conf is
	pip_env=()
	while IFS= read -r v; do
		pip_env+=("$v=${!v}")
	done < <(compgen -e | grep '^PIP_' || true)
	exec sudo env VNPU_CACHE="$cache" VNPU_PIP_HOME="$HOME" \
		"${pip_env[@]}" "$self" "${args[@]}"
fi

# shellcheck source=scripts/lib/apt.sh
. scripts/lib/apt.sh

t_all=$EPOCHREALTIME
declare -a timings=()
timed() { # NAME START
	timings+=("$(awk -v a="$2" -v b="$EPOCHREALTIME" -v n="$1" \
		'BEGIN {printf "%-9s %7.1f s", n, b - a}')")
}
report_timings() {
	local t
	timed total "$t_all"
	log "stage times:"
	for t in "${timings[@]}"; do log "  $t"; done
}

# Another release than the machine's: its own template and root, its
# packages from the same archive.
host_codename=$codename
suite=${suite:-$codename}
case $suite in *[!a-z]* | "") die "--suite: a Debian release name (trixie)" ;; esac
base=$cache/clean-room
template=$base/template
root=$base/root
if [ "$suite" != "$host_codename" ]; then
	template=$base/template-$suite
	root=$base/root-$suite
fi
user=newcomer
mkdir -p "$base"

# ---- tools and archive --------------------------------------------------------
need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v unshare >/dev/null || need+=(util-linux)
command -v git >/dev/null || need+=(git)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	apt_get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
		{ apt_get update -qq && apt_get install -y -qq \
			--no-install-recommends "${need[@]}" >/dev/null; }
fi
read -r archive keyring < <(debian_archive) || exit 2
free_kib=$(df -Pk "$base" | awk 'NR == 2 {print $4}')
[ "$free_kib" -ge $((8 * 1024 * 1024)) ] ||
	die "$base has $((free_kib / 1024)) MiB free; a clean-room run needs 8 GiB"

# Whether anything is mounted at or under DIR, in this namespace.
mounted_under() {
	findmnt -rn -o TARGET | awk -v d="$1" \
		'$0 == d || index($0, d "/") == 1 {f = 1} END {exit !f}'
}
remove_root() {
	local dir=$1 pid killed=0
	[ -e "$dir" ] || return 0
	# Processes left in the root (a daemon apt started, say) go first.
	for pid in /proc/[0-9]*; do
		if [ "$(readlink "$pid/root" 2>/dev/null)" = "$dir" ]; then
			kill -9 "${pid#/proc/}" 2>/dev/null || true
			killed=1
		fi
	done
	[ $killed -eq 0 ] || sleep 1
	if mounted_under "$dir"; then
		die "something is still mounted under $dir; not removing it"
	fi
	rm -rf --one-file-system "$dir"
}

# ---- template -----------------------------------------------------------------
# What defines it: the archive, the suite, the packages, the user and this
# script's way of making it.
template_id=$(printf '%s\n' "$archive" "$keyring" "$suite" minbase \
	git,sudo,ca-certificates "$user" v1 | sha256sum | cut -c1-16)
t0=$EPOCHREALTIME
if [ "$(cat "$template/.vnpu-template" 2>/dev/null)" != "$template_id" ] ||
	[ -n "$(find "$template/.vnpu-template" -mtime +7 2>/dev/null)" ]; then
	log "making the template root (debootstrap $suite minbase)"
	remove_root "$template"
	remove_root "$template.tmp"
	keyring_opt=()
	[ "$keyring" = - ] || keyring_opt=(--keyring="$keyring")
	if ! debootstrap --variant=minbase "${keyring_opt[@]}" \
		--include=git,sudo,ca-certificates "$suite" "$template.tmp" \
		"$archive" >"$base/debootstrap.log" 2>&1; then
		tail -20 "$base/debootstrap.log" >&2
		die "debootstrap failed (log: $base/debootstrap.log)"
	fi
	# The apt sources of a Debian install of that release, from this
	# machine's own: the archive, its updates and the security archive,
	# no more (the machine's release's names turned into the root's).
	rm -f "$template.tmp/etc/apt/sources.list"
	apt_sources | awk -v c="$host_codename" -v s="$suite" '$1 == "deb" &&
		($2 == c || $2 == c "-updates" || $2 == c "-security") &&
		!seen[$2]++ { sub("^" c, s, $2); print }' |
		while read -r _ dist uri key; do
			printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\n' \
				"$uri" "$dist"
			[ "$key" = - ] || [ ! -f "$template.tmp$key" ] ||
				printf 'Signed-By: %s\n' "$key"
			echo
		done >"$template.tmp/etc/apt/sources.list.d/debian.sources"
	# The newcomer: an ordinary user who may use sudo.
	chroot "$template.tmp" useradd -m -s /bin/bash "$user"
	echo "$user ALL=(ALL) NOPASSWD: ALL" \
		>"$template.tmp/etc/sudoers.d/$user"
	chmod 0440 "$template.tmp/etc/sudoers.d/$user"
	echo "$template_id" >"$template.tmp/.vnpu-template"
	mv "$template.tmp" "$template"
	timed template "$t0"
else
	log "reusing the template root (made $(date -r "$template/.vnpu-template" +%F))"
	timed template "$t0"
fi

# ---- the root: a copy of the template, and the clone ----------------------------
trap 'report_timings' EXIT
t0=$EPOCHREALTIME
remove_root "$root"
cp -a "$template" "$root"
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
echo "127.0.1.1 $(hostname)" >>"$root/etc/hosts"
timed copy "$t0"

# ---- pip as this machine has it -------------------------------------------------
# The settings pip reads: system-wide files as they are, the caller's own
# for the root's users (the newcomer and root).
caller_home=${VNPU_PIP_HOME:-$HOME}
pip_files=()
for f in /etc/pip.conf /etc/xdg/pip/pip.conf "${PIP_CONFIG_FILE:-}" \
	"$caller_home/.config/pip/pip.conf" "$caller_home/.pip/pip.conf"; do
	[ -n "$f" ] && [ -f "$f" ] && pip_files+=("$f")
done
[ ! -f /etc/pip.conf ] || cp /etc/pip.conf "$root/etc/pip.conf"
[ ! -d /etc/xdg/pip ] || { mkdir -p "$root/etc/xdg" &&
	cp -a /etc/xdg/pip "$root/etc/xdg/"; }
if [ -n "${PIP_CONFIG_FILE:-}" ] && [ -f "$PIP_CONFIG_FILE" ]; then
	mkdir -p "$root$(dirname "$PIP_CONFIG_FILE")"
	cp "$PIP_CONFIG_FILE" "$root$PIP_CONFIG_FILE"
fi
for home in "/home/$user" /root; do
	for f in .config/pip/pip.conf .pip/pip.conf; do
		[ -f "$caller_home/$f" ] || continue
		mkdir -p "$root$home/$(dirname "$f")"
		cp "$caller_home/$f" "$root$home/$f"
	done
done
# "KEY VALUE" for each value of the options that name local files:
# find-links, index-url, extra-index-url, constraint, cert, from the files (INI,
# values may go on over indented lines) and from PIP_* variables.
pip_local_values() {
	[ ${#pip_files[@]} -eq 0 ] || awk '
		/^[ \t]*([#;]|$)/ { next }
		/^\[/ { k = ""; next }
		/^[ \t]/ { if (k != "") print k, $0; next }
		{
			k = $0; sub(/[ \t]*[=:].*/, "", k); gsub(/_/, "-", k)
			v = $0; sub(/^[^=:]*[=:]/, "", v)
			if (k ~ /^(find-links|index-url|extra-index-url|constraint|cert)$/)
				print k, v
			else
				k = ""
		}' "${pip_files[@]}"
	echo "find-links ${PIP_FIND_LINKS:-}"
	echo "index-url ${PIP_INDEX_URL:-}"
	echo "extra-index-url ${PIP_EXTRA_INDEX_URL:-}"
	echo "constraint ${PIP_CONSTRAINT:-}"
	echo "cert ${PIP_CERT:-}"
}
# A local index (PEP 503: DIR/PROJECT/index.html) links to its files by
# relative or file: URLs, often outside DIR (../../files/X.whl): the
# directories those links name, which must be in the root as well.
index_link_dirs() {
	local dir=$1 page href
	for page in "$dir"/*/index.html; do
		[ -f "$page" ] || continue
		grep -o 'href="[^"#]*' "$page" | sed 's/^href="//' |
			while read -r href; do
				case $href in
				file://*) href=${href#file://} ;;
				*://*) continue ;;
				/*) ;;
				*) href=$(dirname "$page")/$href ;;
				esac
				dirname "$href"
			done
	done | sort -u | while read -r d; do
		[ -d "$d" ] && realpath "$d"
	done | sort -u
}
# Local directories are mounted read-only at the same path; files (a
# constraints list) are copied there. The certificate bundle pip is told to
# trust replaces the root's at that path: it holds the authorities this
# machine's network needs (a proxy's), which a fresh Debian lacks.
pip_dirs=()
while read -r key values; do
	for v in $values; do
		v=${v#file://}
		v=${v#file:}
		case $v in /*) ;; *) continue ;; esac
		if [ -d "$v" ]; then
			pip_dirs+=("$(realpath "$v")")
			case $key in *index-url)
				mapfile -t -O ${#pip_dirs[@]} pip_dirs < \
					<(index_link_dirs "$v") ;;
			esac
		elif [ "$key" = constraint ] && [ -f "$v" ] &&
			[ ! -e "$root$v" ]; then
			mkdir -p "$root$(dirname "$v")"
			cp "$v" "$root$v"
		elif [ "$key" = cert ] && [ -f "$v" ]; then
			mkdir -p "$root$(dirname "$v")"
			cp -L "$v" "$root$v.vnpu-tmp" && mv "$root$v.vnpu-tmp" "$root$v"
		fi
	done
done < <(pip_local_values)
mapfile -t pip_dirs < <(printf '%s\n' "${pip_dirs[@]}" | grep . | sort -u)
[ ${#pip_dirs[@]} -eq 0 ] ||
	log "pip: this machine's settings; read-only in the root: ${pip_dirs[*]}"

t0=$EPOCHREALTIME
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
	log "note: uncommitted changes in $repo are not tested (commit $commit)"
fi
clone=$root/home/$user/vnpu
git clone -q --no-hardlinks "$repo" "$clone"
git -C "$clone" -c advice.detachedHead=false checkout -q "$commit"
log "testing $(git -C "$clone" log -1 --format='%h %s')"
if [ -n "$debs" ]; then
	mkdir -p "$root/home/$user/debs"
	cp "$debs"/*.deb "$root/home/$user/debs/"
	# with the torch_vnpu wheel, where torch_vnpu ships as one
	find "$debs" -maxdepth 1 -name 'torch_vnpu-*.whl' \
		-exec cp -t "$root/home/$user/debs/" {} +
fi
chroot "$root" chown -R "$user:$user" "/home/$user"
timed clone "$t0"

# ---- the run ----------------------------------------------------------------------
verify=0
if [ -z "$cmd" ]; then
	cmd=scripts/run.sh
	verify=1
fi
mkdir -p "$base/logs"
out=$base/logs/$(date +%Y%m%d-%H%M%S)-${commit:0:12}.log
keep_newest 10 "$base/logs" '*.log'
log "running '$cmd' as $user (log: $out)"
# The mounts live in a private mount namespace. Inside a chroot (this script
# run by one that itself runs in a fresh root) "/" is no mount point, so its
# propagation cannot be made private: there the mounts are made in the
# caller's namespace, and the trap of --inside still removes them on exit.
ns=(unshare --mount --propagation private --)
if ! unshare --mount --propagation private true 2>/dev/null; then
	log "no private mount namespace here (in a chroot?): mounting in this one"
	ns=()
fi
t0=$EPOCHREALTIME
set +e
"${ns[@]}" "$self" --inside "$root" "$user" "$cmd" "${pip_dirs[@]}" 2>&1 |
	tee "$out"
rc=${PIPESTATUS[0]}
set -e
timed run "$t0"
log "'$cmd' exited $rc"
if [ -n "$results" ] && [ -d "$clone/results" ]; then
	# into DIR, replacing files of the same name only; to whoever ran this
	# script through sudo
	mkdir -p "$results"
	cp -r "$clone/results/." "$results/"
	chown -R "${SUDO_UID:-0}:${SUDO_GID:-0}" "$results"
fi

verdict=$rc
if [ $verify -eq 1 ] && [ $rc -eq 0 ]; then
	rows=$(grep -cE '^[a-z0-9_-]+ +(PASS|FAIL) ' "$out" || true)
	fails=$(grep -E '^[a-z0-9_-]+ +FAIL ' "$out" || true)
	# Each workload program ends with "N passed, M failed"; the two in
	# the VM always run, the PyTorch one when torch_vnpu is built.
	programs=$(grep -cE '^[0-9]+ passed, [0-9]+ failed$' "$out" || true)
	sums=$(grep -cE '^[0-9]+ passed, 0 failed$' "$out" || true)
	if ! grep -q '^device: vnpu, drm backend' "$out"; then
		log "FAIL: the workloads did not run through vnpu.ko in the VM"
		verdict=1
	elif [ -n "$fails" ] || [ "$rows" -eq 0 ] || [ "$programs" -lt 2 ] ||
		[ "$sums" -ne "$programs" ]; then
		log "FAIL: $rows workload rows, failed: ${fails:-none}," \
			"$sums of $programs programs with 0 failed (at least 2 expected)"
		verdict=1
	else
		log "every workload passed in the VM ($rows rows)"
	fi
fi

# ---- cleanup ----------------------------------------------------------------------
t0=$EPOCHREALTIME
if [ $keep -eq 1 ]; then
	log "root kept: $root"
else
	remove_root "$root"
fi
timed cleanup "$t0"
log "verdict: $([ $verdict -eq 0 ] && echo PASS || echo FAIL)"
exit $verdict
