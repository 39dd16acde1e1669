# SPDX-License-Identifier: GPL-2.0-only
"""The generated CI workflows run for real on this machine (`scripts/ci-local`): the GitLab
pipeline under gitlab-ci-local, the GitHub job's steps on a fresh Debian 12 root filesystem.
"""
