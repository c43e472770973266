"""stages/identity"""
