bf
bagent a speaks protocol 3, this coordinator (vbench x) protocol 4: install the same vbench version