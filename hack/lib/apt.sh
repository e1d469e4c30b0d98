# Sourced by hack/install-*.sh: installs Debian packages the way each of
# them needs, as root or through sudo, quietly.

apt_sudo=()
if [[ $(id -u) -ne 0 ]]; then
	apt_sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive

# apt_update refreshes the archive's index (a fresh machine has none, and
# apt-cache then knows no package), once per script.
apt_update() {
	if [[ -z ${apt_updated:-} ]]; then
		"${apt_sudo[@]}" apt-get update -qq
		apt_updated=1
	fi
}

# apt_install installs the packages named.
apt_install() {
	apt_update
	"${apt_sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
