"""Trust boundaries: which pod may reach which port (NetworkPolicies from the declared flows), and what each
stack's identity may do in the API servers it writes to."""
