# SPDX-License-Identifier: GPL-2.0-only
"""Protocol numbers and names shared by the parser, the encoder and the dumps."""

IPPROTO_ICMP = 1
IPPROTO_IPIP = 4
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_IPV6 = 41
IPPROTO_GRE = 47
IPPROTO_ICMPV6 = 58
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_MPLS_UC = 0x8847

TCPOPT_EOL, TCPOPT_NOP, TCPOPT_MSS, TCPOPT_WSCALE, TCPOPT_SACK_PERM, TCPOPT_SACK = 0, 1, 2, 3, 4, 5
TCPOPT_TS, TCPOPT_MD5, TCPOPT_FO, TCPOPT_ACCECN0, TCPOPT_ACCECN1, TCPOPT_EXP = (
    8,
    19,
    34,
    172,
    174,
    254,
)
TCPOPT_FO_MAGIC = 0xF989

ICMPV4_TYPES = {
    "echo_reply": 0,
    "unreachable": 3,
    "source_quench": 4,
    "redirect": 5,
    "echo_request": 8,
    "time_exceeded": 11,
    "parameter_problem": 12,
    "timestamp_request": 13,
    "timestamp_reply": 14,
    "information_request": 15,
    "information_reply": 16,
    "address_mask_request": 17,
    "address_mask_reply": 18,
}
ICMPV4_UNREACH_CODES = {
    name: code
    for code, name in enumerate(
        "net_unreachable host_unreachable protocol_unreachable port_unreachable frag_needed "
        "source_route_failed net_unknown host_unknown source_host_isolated net_prohibited "
        "host_prohibited net_unreachable_for_tos host_unreachable_for_tos packet_filtered "
        "precedence_violation precedence_cutoff".split()
    )
}
ICMPV6_TYPES = {
    "unreachable": 1,
    "packet_too_big": 2,
    "time_exceeded": 3,
    "parameter_problem": 4,
    "echo_request": 128,
    "echo_reply": 129,
}
ICMPV6_CODES = {
    "unreachable": {
        "net_unreachable": 0,
        "no_route": 0,
        "admin_prohibited": 1,
        "not_neighbour": 2,
        "address_unreachable": 3,
        "port_unreachable": 4,
    },
    "time_exceeded": {"exceeded_hop_limit": 0, "exceeded_frag_time": 1},
    "parameter_problem": {"header_field": 0, "unknown_next_header": 1, "unknown_option": 2},
}


def icmp_type(name: str, v6: bool) -> int | None:
    """Number of ICMP type ``name`` for the run's family, or None if unknown there."""
    if name.startswith("type_") and name[5:].isdigit():
        return int(name[5:]) if int(name[5:]) < 256 else None
    return (ICMPV6_TYPES if v6 else ICMPV4_TYPES).get(name)


def icmp_code(type_name: str, name: str, v6: bool) -> int | None:
    """Number of ICMP code ``name`` under ``type_name``, or None if unknown there."""
    if name.startswith("code_") and name[5:].isdigit():
        return int(name[5:]) if int(name[5:]) < 256 else None
    if v6:
        return ICMPV6_CODES.get(type_name, {}).get(name)
    return ICMPV4_UNREACH_CODES.get(name) if type_name == "unreachable" else None
