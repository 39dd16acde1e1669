# SPDX-License-Identifier: GPL-2.0-only
"""Small programs the traffic generators start inside a namespace, by path, with ``python -S``.

Each is a script of its own, never imported: it needs only the standard library, because
``-S`` leaves out ``site`` and with it every installed package (:data:`netns.traffic.STDLIB_PYTHON`
says why). This file exists so that an installed netregress ships them.
"""
