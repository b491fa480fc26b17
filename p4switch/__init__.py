"""p4switch: a pure-Python P4_16 target with AF_PACKET ports, egress shaping and pcap capture."""
