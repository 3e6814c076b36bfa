"""tuning"""
