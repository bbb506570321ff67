
Tagent-1host-a"client"orchestrator