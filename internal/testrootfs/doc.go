// Package testrootfs builds a tiny root file system for tests of container
// images (srun and sbatch --container-image): Debian's busybox-static,
// unpacked from the package (apt-get download, dpkg-deb -x) or copied from
// an installed /bin/busybox, with its applets linked in. Tests that cannot
// get busybox skip. It is for tests only.
//
// It imports only the standard library.
package testrootfs
