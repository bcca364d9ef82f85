#!/bin/sh
# The Dockerfile's base image, debian:bookworm-slim: pulled when a registry serves it, else
# built from Debian's packages for a machine that reaches Debian's archive but no image
# registry: a minimal bookworm root file system (debootstrap's "minbase" variant) imported into
# podman's local storage under the name the Dockerfile starts from. Run as root; needs
# debootstrap (apt-get install -y debootstrap).
#
#   deploy/base-image.sh [IMAGE] [MIRROR]
#
# IMAGE defaults to docker.io/library/debian:bookworm-slim, so that `podman build` finds it
# without pulling; MIRROR to http://deb.debian.org/debian. Extra podman options (a storage
# driver, say) come from PODMAN_OPTS.
set -eu

image="${1:-docker.io/library/debian:bookworm-slim}"
mirror="${2:-http://deb.debian.org/debian}"
podman="podman ${PODMAN_OPTS:-}"

if $podman image exists "$image"; then
    echo "$image is already in podman's storage"
    exit 0
fi
if $podman pull "$image" >/dev/null 2>&1; then
    echo "pulled $image"
    exit 0
fi
echo "no registry serves $image here: building it from Debian's packages"
command -v debootstrap >/dev/null || {
    echo "debootstrap is needed to build $image (Debian: apt-get install -y debootstrap)" >&2
    exit 1
}

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root/fs" "$mirror"
# As the registry's slim image: no package lists or caches in the image.
rm -rf "$root"/fs/var/lib/apt/lists/* "$root"/fs/var/cache/apt/*.bin
tar -C "$root/fs" --numeric-owner -c . | $podman import \
    --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' - "$image"
echo "built $image from Debian's packages"
