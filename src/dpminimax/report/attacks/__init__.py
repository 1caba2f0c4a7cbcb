"""The membership-inference reports: LiRA and the release audit."""
