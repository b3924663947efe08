"""`hubctl drill`: kill a member of a live fleet for real and time every phase against `hubctl budget`.

`kube.py` (kubeconfig clients), `hcloud.py` (the Hetzner API and the kill methods), `dnsq.py` (authoritative and
recursive DNS queries), `service.py` (the probe service's documents), `timeline.py` (phases, JSON, Markdown,
SVG), `run.py` (the drill itself: deploy, steady state, kill, observe, restore, clean up).
"""
